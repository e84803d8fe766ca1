// The output writer (io/output_file.hpp): targets it refuses, modes it keeps, temporary names,
// all-or-none transactions, and no temporary file left behind on SIGTERM.
#include <doctest/doctest.h>

#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.hpp"
#include "segadvise/io/output_file.hpp"
#include "segadvise/costmodel/types.hpp"

using namespace segadvise;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "segadvise-out-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  int leftovers() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(path)) n += e.path().filename().string().rfind(".segadvise-", 0) == 0;
    return n;
  }
};

using test::slurp;

std::string error_of(const std::function<void()>& f) { return test::input_error_of(f); }

// whether the directory's filesystem gives unnamed files (O_TMPFILE): then nothing is named before commit
bool unnamed_files(const fs::path& dir) {
#ifdef O_TMPFILE
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY, 0600);
  if (fd < 0) return false;
  ::close(fd);
  return true;
#else
  (void)dir;
  return false;
#endif
}

mode_t mode_of(const std::string& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("write_file_atomically: new path, replaced file, kept mode") {
  TempDir d;
  write_file_atomically(d / "a.json", "one\n");
  CHECK(slurp(d / "a.json") == "one\n");
  ::chmod((d / "a.json").c_str(), 0600);
  write_file_atomically(d / "a.json", "two\n");
  CHECK(slurp(d / "a.json") == "two\n");
  CHECK(mode_of(d / "a.json") == 0600);
  CHECK(d.leftovers() == 0);
  CHECK(pending_output_temps() == 0);
}

TEST_CASE("write_file_atomically keeps the owner of a file it replaces (as root)") {
  if (::geteuid() != 0) return;  // only root can give a file to another user
  TempDir d;
  write_file_atomically(d / "cfg.json", "one");
  REQUIRE(::chown((d / "cfg.json").c_str(), 4321, 4322) == 0);
  write_file_atomically(d / "cfg.json", "two");
  struct stat st {};
  ::stat((d / "cfg.json").c_str(), &st);
  CHECK(st.st_uid == 4321u);
  CHECK(st.st_gid == 4322u);
  CHECK(slurp(d / "cfg.json") == "two");
}

TEST_CASE("write_file_atomically: a 255-character name (NAME_MAX) works") {
  TempDir d;
  const std::string name = std::string(250, 'n') + ".json";  // 255 bytes, the longest valid name
  write_file_atomically(d / name, "x");
  CHECK(slurp(d / name) == "x");
}

TEST_CASE("write_file_atomically refuses directories, FIFOs, devices and (unless allowed) symlinks") {
  TempDir d;
  CHECK(error_of([&] { write_file_atomically(d.path.string(), "x"); }).find("it is a directory") != std::string::npos);
  ::mkfifo((d / "fifo").c_str(), 0600);
  CHECK(error_of([&] { write_file_atomically(d / "fifo", "x"); }).find("it is a FIFO") != std::string::npos);
  CHECK(fs::is_fifo(d / "fifo"));
  CHECK(error_of([&] { write_file_atomically("/dev/null", "x"); }).find("a character device") != std::string::npos);
  CHECK(fs::is_character_file("/dev/null"));

  write_file_atomically(d / "real", "old");
  fs::create_symlink(d / "real", d / "link");
  CHECK(error_of([&] { write_file_atomically(d / "link", "new"); }).find("symbolic link") != std::string::npos);
  CHECK(slurp(d / "real") == "old");
  // allowed: the file the link names is replaced, the link stays a link
  write_file_atomically(d / "link", "new", OutputOptions{true});
  CHECK(fs::is_symlink(d / "link"));
  CHECK(slurp(d / "real") == "new");
  // a link to a device is refused even when links are allowed
  fs::create_symlink("/dev/null", d / "devlink");
  CHECK(error_of([&] { write_file_atomically(d / "devlink", "x", OutputOptions{true}); }).find("device") !=
        std::string::npos);
  CHECK(d.leftovers() == 0);
}

TEST_CASE("an output transaction writes all its files or none") {
  TempDir d;
  {
    OutputTransaction tx;
    tx.stage(d / "plan.json", "plan");
    // staged: an unnamed file where the filesystem has them, else one named temporary
    const int named = unnamed_files(d.path) ? 0 : 1;
    CHECK(d.leftovers() == named);
    CHECK(pending_output_temps() == named);
    CHECK(error_of([&] { tx.stage("/nonexistent-segadvise-dir/x.svg", "svg"); }).find("x.svg") != std::string::npos);
  }  // not committed: the staged plan is removed
  CHECK(!fs::exists(d / "plan.json"));
  CHECK(d.leftovers() == 0);
  CHECK(pending_output_temps() == 0);

  OutputTransaction tx;
  tx.stage(d / "plan.json", "plan");
  tx.stage(d / "plot.svg", "svg");
  CHECK(error_of([&] { tx.stage(d / "plan.json", "again"); }).find("named twice") != std::string::npos);
  // one new file by two names: both named in the error
  fs::create_directories(d / "out");
  const std::string other = d / "out/../plan.json";
  const std::string err = error_of([&] { tx.stage(other, "again"); });
  CHECK(err.find("same file") != std::string::npos);
  CHECK(err.find("out/../plan.json") != std::string::npos);
  CHECK(!fs::exists(d / "plan.json"));
  tx.commit();
  CHECK(slurp(d / "plan.json") == "plan");
  CHECK(slurp(d / "plot.svg") == "svg");
  CHECK(d.leftovers() == 0);
}

TEST_CASE("a commit whose second rename fails puts the first file back") {
  TempDir d;
  fs::create_directories(d / "a");
  fs::create_directories(d / "b");
  {
    std::ofstream(d / "a/plan.json") << "old plan";
  }
  std::string err;
  {
    OutputTransaction tx;
    tx.stage(d / "a/plan.json", "new plan");
    tx.stage(d / "a/new.svg", "new svg");  // a new file: undone by removing it
    tx.stage(d / "b/plot.svg", "svg");
    fs::remove_all(d / "b");  // its temporary file goes with it: the third rename fails (ENOENT)
    err = error_of([&] { tx.commit(); });
  }
  CHECK(err.find("plot.svg") != std::string::npos);
  CHECK(err.find("put back") != std::string::npos);
  CHECK(slurp(d / "a/plan.json") == "old plan");
  CHECK(!fs::exists(d / "a/new.svg"));
  CHECK(pending_output_temps() == 0);
  int left = 0;  // no temporary or kept-old file stays behind
  for (const auto& e : fs::directory_iterator(fs::path(d / "a"))) left += e.path().filename() != "plan.json";
  CHECK(left == 0);
}

TEST_CASE("SIGTERM during a write removes the temporary file") {
  TempDir d;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGTERM, SIG_DFL);  // not the test framework's crash handler: the default, after ours
    OutputTransaction tx;
    tx.stage(d / "out.json", "half");
    ::raise(SIGTERM);  // staged, not committed: the handler must remove the temporary file
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(d.leftovers() == 0);
  CHECK(!fs::exists(d / "out.json"));
}

TEST_CASE("two names of one existing file (a hard link too) are refused, naming both") {
  TempDir d;
  write_file_atomically(d / "x.svg", "old");
  fs::create_hard_link(d / "x.svg", d / "y.svg");
  OutputTransaction tx;
  tx.stage(d / "x.svg", "a");
  const std::string err = error_of([&] { tx.stage(d / "y.svg", "b"); });
  CHECK(err.find("x.svg") != std::string::npos);
  CHECK(err.find("y.svg") != std::string::npos);
  CHECK(err.find("same file") != std::string::npos);
}

TEST_CASE("SIGKILL during a write leaves nothing beside the target (O_TMPFILE)") {
  TempDir d;
  if (!unnamed_files(d.path)) return;  // a filesystem without O_TMPFILE: a named temporary is the fallback
  write_file_atomically(d / "out.json", "old");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    OutputTransaction tx;
    tx.stage(d / "out.json", std::string(1 << 20, 'x'));
    ::raise(SIGKILL);  // no handler runs: only an unnamed file leaves nothing
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(d.leftovers() == 0);
  CHECK(slurp(d / "out.json") == "old");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(d.path)) entries += e.is_regular_file() ? 1 : 0;
  CHECK(entries == 1);
}
