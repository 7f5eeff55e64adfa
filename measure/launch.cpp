#include "launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "remove_tree.h"

namespace trainsim::measure {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = std::chrono::milliseconds(20);

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

struct Child {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
};

// Forks and execs one rank. Everything the child needs is prepared before fork(): between fork
// and exec only async-signal-safe calls run (the parent is multi-threaded: LibTorch pools).
pid_t spawn(const std::vector<std::string>& argv_strings) {
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (const auto& s : argv_strings) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("launch_ranks: fork failed: ") + strerror(errno));
  if (pid == 0) {
    // A rank must not outlive an interrupted `measure` (it would hang in a collective forever).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    execv(argv[0], argv.data());
    _exit(127);  // exec failed: reported as "exited with status 127"
  }
  return pid;
}

// Non-blocking reap of every running child; returns the index of the first one that failed.
int reap(std::vector<Child>& children) {
  int first_failed = -1;
  for (size_t r = 0; r < children.size(); ++r) {
    Child& c = children[r];
    if (!c.running) continue;
    int status = 0;
    const pid_t got = waitpid(c.pid, &status, WNOHANG);
    if (got == c.pid) {
      c.running = false;
      c.status = status;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && first_failed < 0) first_failed = static_cast<int>(r);
    }
  }
  return first_failed;
}

bool any_running(const std::vector<Child>& children) {
  for (const auto& c : children) {
    if (c.running) return true;
  }
  return false;
}

// Waits up to `seconds` for the running children to end by themselves.
void wait_for_exit(std::vector<Child>& children, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (any_running(children) && Clock::now() < deadline) {
    reap(children);
    if (any_running(children)) std::this_thread::sleep_for(kPollInterval);
  }
}

// SIGKILL to the children still running, then reaps them (blocking: SIGKILL cannot be ignored).
void kill_running(std::vector<Child>& children) {
  for (auto& c : children) {
    if (c.running) kill(c.pid, SIGKILL);
  }
  for (auto& c : children) {
    if (!c.running) continue;
    int status = 0;
    while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    c.running = false;
    c.status = status;
  }
}

std::mutex g_step_mutex;
std::string g_step = "starting";  // NOLINT: the one step of this process, for its heartbeat

std::string progress_path(const std::string& store_dir, int rank) {
  return store_dir + "/progress-" + std::to_string(rank);
}

// Rewrites `path` with `text` through a temporary beside it and a rename, so that a reader sees
// the old text or the new one. Silent when the folder is gone (the launcher ended the run).
void rewrite(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (written) ::rename(temporary.c_str(), path.c_str());
}

// " (last step: ...)" from a rank's heartbeat file, or what its absence says.
std::string last_step(const std::string& store_dir, int rank) {
  std::ifstream in(progress_path(store_dir, rank));
  std::string step;
  if (!in || !std::getline(in, step) || step.empty()) return " (before its first heartbeat)";
  return " (last step: " + step + ")";
}

// Seconds since `path` was last written, counted from `started` when it never was.
double seconds_silent(const std::string& path, std::chrono::system_clock::time_point started) {
  auto last = started;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    const auto written = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    last = std::max(last, written);
  }
  return std::chrono::duration<double>(std::chrono::system_clock::now() - last).count();
}

}  // namespace

double default_stall_seconds() {
  constexpr double kStallSeconds = 30;
  const char* text = std::getenv("TRAINSIM_STALL_S");
  if (text == nullptr || *text == '\0') return kStallSeconds;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (*end != '\0' || !(value > 0) || value > 1e6) {
    throw std::invalid_argument(std::string("TRAINSIM_STALL_S=") + text + ": expected seconds > 0");
  }
  return value;
}

void set_rank_step(const std::string& step) {
  std::lock_guard<std::mutex> lock(g_step_mutex);
  g_step = step;
}

struct RankHeartbeat::State {
  std::string path;
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread thread;
};

RankHeartbeat::RankHeartbeat(const std::string& store_dir, int rank) : state_(std::make_unique<State>()) {
  state_->path = progress_path(store_dir, rank);
  State* s = state_.get();
  s->thread = std::thread([s] {
    std::unique_lock<std::mutex> lock(s->mutex);
    while (!s->stop) {
      std::string step;
      {
        std::lock_guard<std::mutex> step_lock(g_step_mutex);
        step = g_step;
      }
      rewrite(s->path, step + "\n");
      s->wake.wait_for(lock, std::chrono::seconds(1), [s] { return s->stop; });
    }
  });
}

RankHeartbeat::~RankHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_all();
  state_->thread.join();
}

std::unique_ptr<RankHeartbeat> heartbeat_from_args(int argc, const char* const* argv) {
  const char* store = nullptr;
  const char* rank = nullptr;
  for (int i = 0; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--store") == 0) store = argv[i + 1];
    if (std::strcmp(argv[i], "--rank") == 0) rank = argv[i + 1];
  }
  if (store == nullptr || rank == nullptr) return nullptr;
  char* end = nullptr;
  const long r = std::strtol(rank, &end, 10);
  if (*end != '\0' || r < 0 || r > (1 << 20)) return nullptr;  // the worker's own parser says why
  return std::make_unique<RankHeartbeat>(store, static_cast<int>(r));
}

namespace {

// Removes PREFIX<pid>-* folders under `dir` owned by this user whose process no longer exists.
void remove_abandoned(const std::filesystem::path& dir, const std::string& prefix) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t dash = name.find('-', prefix.size());
    const std::string digits = name.substr(prefix.size(), dash == std::string::npos ? 0 : dash - prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    const pid_t owner = static_cast<pid_t>(std::stol(digits));
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    remove_tree(it->path().string());
  }
}

}  // namespace

TempDir::TempDir(const std::string& prefix) {
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  remove_abandoned(tmp, prefix);
  std::string pattern = (tmp / (prefix + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary folder " + pattern);
  }
  path_ = pattern;
}

TempDir::~TempDir() { remove_tree(path_); }

std::string self_executable() {
  std::vector<char> buffer(4096);
  const ssize_t n = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (n <= 0) throw std::runtime_error(std::string("cannot read /proc/self/exe: ") + strerror(errno));
  return std::string(buffer.data(), static_cast<size_t>(n));
}

int run_program(const std::vector<std::string>& argv_strings, double timeout_s, bool quiet) {
  if (argv_strings.empty()) throw std::invalid_argument("run_program: no program");
  std::vector<char*> argv;
  for (const auto& s : argv_strings) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  const int null_fd = quiet ? open("/dev/null", O_WRONLY | O_CLOEXEC) : -1;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    if (null_fd >= 0) close(null_fd);
    throw std::runtime_error(std::string("run_program: fork failed: ") + strerror(errno));
  }
  if (pid == 0) {  // only async-signal-safe calls until exec (see spawn)
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (null_fd >= 0) {
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  if (null_fd >= 0) close(null_fd);
  std::vector<Child> child(1);
  child[0].pid = pid;
  child[0].running = true;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (child[0].running) {
    reap(child);
    if (!child[0].running) break;
    if (Clock::now() >= deadline) {
      kill_running(child);
      throw std::runtime_error(argv_strings[0] + " still running after the " + std::to_string(timeout_s) +
                               " s timeout: killed");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  const int status = child[0].status;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

void launch_ranks(const std::string& exe, const std::vector<std::string>& args, int world_size,
                  const std::string& store_dir, double timeout_s, double grace_s, double stall_s) {
  if (world_size < 1) throw std::invalid_argument("launch_ranks: world_size must be >= 1");
  std::vector<Child> children(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    std::vector<std::string> argv{exe};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const std::string& s : {std::string("--rank"), std::to_string(r), std::string("--world-size"),
                                 std::to_string(world_size), std::string("--store"), store_dir}) {
      argv.push_back(s);
    }
    try {
      children[static_cast<size_t>(r)].pid = spawn(argv);
      children[static_cast<size_t>(r)].running = true;
    } catch (...) {
      kill_running(children);
      throw;
    }
  }

  const auto started = std::chrono::system_clock::now();
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  auto next_look = Clock::now() + std::chrono::seconds(1);
  const std::string who = " of " + std::to_string(world_size) + " (" + exe + ") ";
  while (any_running(children)) {
    const int failed = reap(children);
    if (failed >= 0) {
      // The others are probably blocked in a collective with the dead rank: give them grace_s
      // to notice (their own timeouts) and exit, then kill them. The rank to name: one a signal
      // ended (killed from outside, or crashed) before any was killed here; the others' errors
      // are the consequence.
      wait_for_exit(children, grace_s);
      int culprit = failed;
      for (int r = 0; r < world_size; ++r) {
        const Child& c = children[static_cast<size_t>(r)];
        if (!c.running && WIFSIGNALED(c.status)) {
          culprit = r;
          break;
        }
      }
      kill_running(children);
      throw std::runtime_error("rank " + std::to_string(culprit) + who +
                               describe_status(children[static_cast<size_t>(culprit)].status) +
                               last_step(store_dir, culprit));
    }
    if (Clock::now() >= next_look) {
      next_look += std::chrono::seconds(1);
      for (int r = 0; r < world_size; ++r) {
        if (!children[static_cast<size_t>(r)].running) continue;
        const double silent = seconds_silent(progress_path(store_dir, r), started);
        if (silent > stall_s) {
          kill_running(children);
          char seconds[32];
          std::snprintf(seconds, sizeof seconds, "%.0f", silent);
          throw std::runtime_error("rank " + std::to_string(r) + who + "stalled: no heartbeat for " + seconds +
                                   " s" + last_step(store_dir, r) + "; every rank was stopped");
        }
      }
    }
    if (Clock::now() >= deadline) {
      kill_running(children);
      throw std::runtime_error("ranks of " + exe + " still running after the " +
                               std::to_string(timeout_s) + " s timeout: killed");
    }
    if (any_running(children)) std::this_thread::sleep_for(kPollInterval);
  }
}

namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// A whole decimal integer in [min, max] from variable `name`.
int env_int(const char* name, const std::string& text, long min, long max) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || value < min || value > max) {
    throw std::invalid_argument(std::string(name) + "=" + text + ": expected a whole number from " +
                                std::to_string(min) + " to " + std::to_string(max));
  }
  return static_cast<int>(value);
}

std::string required_env(const char* name, const char* launcher) {
  const std::optional<std::string> value = env(name);
  if (!value || value->empty()) {
    throw std::invalid_argument(std::string(launcher) + " rank without " + name + " in the environment");
  }
  return *value;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  const std::size_t bracket = nodelist.find('[');
  const std::size_t comma = nodelist.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket)) {
    return nodelist.substr(0, comma);
  }
  // prefix[a-b,c]: the prefix and the first number, zero padding kept.
  const std::size_t end = nodelist.find_first_of("-,]", bracket + 1);
  return nodelist.substr(0, bracket) + nodelist.substr(bracket + 1, end - bracket - 1);
}

std::optional<ExternalRank> external_rank_from_env() {
  constexpr long kMaxWorld = 1 << 20;
  ExternalRank r;
  if (const std::optional<std::string> rank = env("RANK")) {
    r.launcher = "torchrun";
    r.world_size = env_int("WORLD_SIZE", required_env("WORLD_SIZE", "torchrun"), 1, kMaxWorld);
    r.rank = env_int("RANK", *rank, 0, r.world_size - 1);
    r.local_rank = env_int("LOCAL_RANK", required_env("LOCAL_RANK", "torchrun"), 0, r.world_size - 1);
    if (const auto local = env("LOCAL_WORLD_SIZE")) r.local_world_size = env_int("LOCAL_WORLD_SIZE", *local, 1, r.world_size);
    r.master_addr = required_env("MASTER_ADDR", "torchrun");
    r.master_port = env_int("MASTER_PORT", required_env("MASTER_PORT", "torchrun"), 1, 65535);
    return r;
  }
  if (const std::optional<std::string> procid = env("SLURM_PROCID")) {
    r.launcher = "slurm";
    r.world_size = env_int("SLURM_NTASKS", required_env("SLURM_NTASKS", "Slurm"), 1, kMaxWorld);
    r.rank = env_int("SLURM_PROCID", *procid, 0, r.world_size - 1);
    r.local_rank = env_int("SLURM_LOCALID", required_env("SLURM_LOCALID", "Slurm"), 0, r.world_size - 1);
    if (const auto per_node = env("SLURM_NTASKS_PER_NODE")) {
      // "4" or "4(x2)": the first count.
      r.local_world_size = env_int("SLURM_NTASKS_PER_NODE", per_node->substr(0, per_node->find('(')), 1, r.world_size);
    }
    const std::optional<std::string> addr = env("MASTER_ADDR");
    r.master_addr = addr && !addr->empty() ? *addr : first_slurm_host(required_env("SLURM_JOB_NODELIST", "Slurm"));
    if (const auto port = env("MASTER_PORT")) r.master_port = env_int("MASTER_PORT", *port, 1, 65535);
    return r;
  }
  return std::nullopt;
}

}  // namespace trainsim::measure
