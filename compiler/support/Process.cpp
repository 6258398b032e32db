#include "compiler/support/Process.h"

#include <cstdio>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace mlcc {

int runProcess(const std::vector<std::string> &argv, std::string *output,
               const std::string &cwd) {
  std::vector<char *> args;
  for (auto &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  int pipefd[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // Close-on-exec: a process spawned meanwhile from another thread must
  // not hold the pipe open (the reader would wait for it too).
  if (output && pipe2(pipefd, O_CLOEXEC) == 0) {
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
    posix_spawn_file_actions_adddup2(&actions, pipefd[1], 2);
    posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  }
  if (!cwd.empty())
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (pipefd[1] >= 0)
    close(pipefd[1]);
  if (rc != 0) {
    if (pipefd[0] >= 0)
      close(pipefd[0]);
    if (output)
      *output = "cannot run '" + argv[0] + "'";
    return 127;
  }
  if (output && pipefd[0] >= 0) {
    char buf[4096];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof buf)) > 0)
      output->append(buf, (size_t)n);
    close(pipefd[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

} // namespace mlcc
