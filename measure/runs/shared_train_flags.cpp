#include "runs/shared_train_flags.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli_util.h"
#include "format/csv.h"
#include "train_flags_json.h"
#include "usage_error.h"

namespace trainsim::measure {
namespace po = boost::program_options;

namespace {

SharedFlag::Kind kind_of(const std::string& name, const std::string& kind) {
  if (kind == "int") return SharedFlag::Kind::kInt;
  if (kind == "choice") return SharedFlag::Kind::kChoice;
  if (kind == "text") return SharedFlag::Kind::kText;
  if (kind == "switch") return SharedFlag::Kind::kSwitch;
  throw std::logic_error("train_flags.json: --" + name + ": kind '" + kind + "' is not int, choice, text or switch");
}

SharedFlag read_flag(const nlohmann::json& entry) {
  SharedFlag f;
  f.name = entry.at("name").get<std::string>();
  f.kind = kind_of(f.name, entry.at("kind").get<std::string>());
  f.help = entry.at("help").get<std::string>();
  if (entry.contains("metavar")) f.metavar = entry.at("metavar").get<std::string>();
  if (f.kind == SharedFlag::Kind::kInt) {
    f.min = entry.at("min").get<int64_t>();
    if (entry.contains("max")) f.max = entry.at("max").get<int64_t>();
  }
  if (f.kind == SharedFlag::Kind::kChoice) f.choices = entry.at("choices").get<std::vector<std::string>>();
  if (entry.contains("default")) {
    const nlohmann::json& d = entry.at("default");
    f.default_value = d.is_string() ? d.get<std::string>() : std::to_string(d.get<int64_t>());
  }
  return f;
}

std::vector<SharedFlag> read_table() {
  try {
    const nlohmann::json table = nlohmann::json::parse(kTrainFlagsJson);
    std::vector<SharedFlag> flags;
    for (const nlohmann::json& entry : table.at("flags")) flags.push_back(read_flag(entry));
    return flags;
  } catch (const nlohmann::json::exception& e) {
    throw std::logic_error(std::string("train_flags.json: ") + e.what());
  }
}

const SharedFlag& flag_named(const std::string& name) {
  const std::vector<SharedFlag>& flags = shared_train_flags();
  const auto it = std::find_if(flags.begin(), flags.end(), [&](const SharedFlag& f) { return f.name == name; });
  if (it == flags.end()) throw std::logic_error("train_flags.json has no flag --" + name);
  return *it;
}

// A valued flag's Boost semantic: an int64 or a string, with the table's default and value name (a
// choice without one shows its values there, "--device cpu|cuda", as argparse does).
po::value_semantic* value_of(const SharedFlag& f) {
  std::string name = f.metavar;
  if (name.empty() && f.kind == SharedFlag::Kind::kChoice) {
    for (const std::string& choice : f.choices) name += (name.empty() ? "" : "|") + choice;
  }
  if (f.kind == SharedFlag::Kind::kInt) {
    po::typed_value<int64_t>* value = po::value<int64_t>();
    if (f.default_value) value->default_value(std::stoll(*f.default_value));
    if (!name.empty()) value->value_name(name);
    return value;
  }
  po::typed_value<std::string>* value = po::value<std::string>();
  if (f.default_value) value->default_value(*f.default_value);
  if (!name.empty()) value->value_name(name);
  return value;
}

}  // namespace

const std::vector<SharedFlag>& shared_train_flags() {
  static const std::vector<SharedFlag> flags = read_table();
  return flags;
}

void add_shared_train_flags(po::options_description& flags) {
  for (const SharedFlag& f : shared_train_flags()) {
    if (f.kind == SharedFlag::Kind::kSwitch) {
      flags.add_options()(f.name.c_str(), f.help.c_str());
    } else {
      flags.add_options()(f.name.c_str(), value_of(f), f.help.c_str());
    }
  }
}

std::optional<int64_t> shared_int(const po::variables_map& vm, const std::string& name) {
  const SharedFlag& f = flag_named(name);
  if (f.kind != SharedFlag::Kind::kInt) throw std::logic_error("--" + name + " is not an int flag");
  if (!vm.count(name)) return std::nullopt;
  const int64_t value = at_least(name.c_str(), vm[name].as<int64_t>(), f.min);
  if (f.max && value > *f.max) throw UsageError("--" + name + ": " + std::to_string(value) + " is too large");
  return value;
}

std::optional<std::string> shared_text(const po::variables_map& vm, const std::string& name) {
  const SharedFlag& f = flag_named(name);
  if (f.kind != SharedFlag::Kind::kChoice && f.kind != SharedFlag::Kind::kText) {
    throw std::logic_error("--" + name + " is not a choice or text flag");
  }
  if (!vm.count(name)) return std::nullopt;
  const std::string value = vm[name].as<std::string>();
  if (f.kind == SharedFlag::Kind::kChoice &&
      std::find(f.choices.begin(), f.choices.end(), value) == f.choices.end()) {
    throw UsageError("--" + name + ": '" + value + "' is not one of " + csv::comma_list(f.choices));
  }
  return value;
}

bool shared_switch(const po::variables_map& vm, const std::string& name) {
  if (flag_named(name).kind != SharedFlag::Kind::kSwitch) throw std::logic_error("--" + name + " is not a switch");
  return vm.count(name) > 0;
}

}  // namespace trainsim::measure
