// trainsim::write_file_atomic (format/atomic_write.h), the one atomic write of both programs.
// It replaced nine copies, two of which used the fixed name FILE.tmp (a file or link planted there
// was written through) and most of which never fsynced.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "format/atomic_write.h"
#include "temp_dir.h"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

class AtomicWrite : public ::testing::Test {
 protected:

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  ::trainsim::testing::TempDir temp_{"trainsim-atomic-write"};
  fs::path dir_ = temp_.path();
};

TEST_F(AtomicWrite, ReplacesTheFileWithMode0644AndLeavesNothingElse) {
  const fs::path file = dir_ / "out.csv";
  std::ofstream(file) << "old";
  write_file_atomic(file.string(), std::string("new\0bytes", 9));
  EXPECT_EQ(read(file), std::string("new\0bytes", 9));
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    ++entries;
    EXPECT_EQ(entry.path().filename(), "out.csv");
  }
  EXPECT_EQ(entries, 1);
}

// The temporary file's name is unpredictable and created exclusively: what was planted at the
// old fixed names (a link to a file elsewhere) stays untouched, and so does its target.
TEST_F(AtomicWrite, APlantedLinkAtTheOldTemporaryNamesIsNeverWrittenThrough) {
  const fs::path victim = dir_ / "victim.txt";
  std::ofstream(victim) << "precious";
  const fs::path file = dir_ / "profile.yaml";
  fs::create_symlink(victim, dir_ / "profile.yaml.tmp");
  fs::create_symlink(victim, dir_ / ("profile.yaml.tmp." + std::to_string(::getpid())));
  write_file_atomic(file.string(), "schema_version: 1\n");
  EXPECT_EQ(read(victim), "precious");
  EXPECT_EQ(read(file), "schema_version: 1\n");
  EXPECT_FALSE(fs::is_symlink(file));
}

// The streamed form: pieces appended, nothing at PATH until commit; dropped uncommitted, it leaves
// the old file and no temporary behind.
TEST_F(AtomicWrite, AWriterInPiecesReplacesTheFileOnlyOnCommit) {
  const fs::path file = dir_ / "predictions.csv";
  std::ofstream(file) << "old";
  {
    AtomicFileWriter dropped(file.string());
    dropped.append("half a file");
  }
  EXPECT_EQ(read(file), "old");
  AtomicFileWriter writer(file.string());
  writer.append("header\n");
  writer.append(std::string(100000, 'x'));
  EXPECT_EQ(read(file), "old");
  writer.commit();
  EXPECT_EQ(read(file), "header\n" + std::string(100000, 'x'));
  EXPECT_THROW(writer.append("more"), std::logic_error);
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    ++entries;
    EXPECT_EQ(entry.path().filename(), "predictions.csv");
  }
  EXPECT_EQ(entries, 1);
}

TEST_F(AtomicWrite, AMissingFolderIsAnErrorNamingThePathAndTheReason) {
  const std::string path = (dir_ / "no-such-folder" / "x.csv").string();
  try {
    write_file_atomic(path, "x");
    FAIL() << "expected WriteError";
  } catch (const WriteError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace trainsim
