/* The native ``svc`` launcher: ``svc.launcher``'s hand-off to a warm CLI server, without starting Python.

   A Python interpreter takes 10 to 15 ms to start here before the console script runs a line; this program takes
   under one. It does what ``svc.launcher`` does when a server fits the command: hands the server the arguments,
   environment, working directory, umask and standard streams (``svc.handoff`` describes the request), passes on
   the signals it gets, and exits as the worker did. Everything else it leaves to the console script, which it
   becomes (exec) before anything is sent: no server yet (the script starts one), a server that refuses the
   command, a command that must run in its own process, an environment that changes what Python would be (a
   ``PYTHON*`` variable: the server that fits is another one), a closed standard stream.

   ``scripts/build_launcher.py`` compiles it for one installation, defining:
     SVC_KEY          the identity a server of that installation has (``svc.handoff.identity``),
     SVC_SOCKET_NAME  its socket's file name in the runtime directory (``svc.handoff.server_base``),
     SVC_FALLBACK     the path of the installation's Python console script. */

#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#if !defined(SVC_KEY) || !defined(SVC_SOCKET_NAME) || !defined(SVC_FALLBACK)
#error "build with scripts/build_launcher.py, which defines SVC_KEY, SVC_SOCKET_NAME and SVC_FALLBACK"
#endif

enum { STARTED = 1, EXITED = 2, RECORD = 8 };

extern char **environ;
static char **arguments;

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define FORWARDED (sizeof forwarded / sizeof forwarded[0])
static struct sigaction previous[FORWARDED + 1]; /* the last: SIGTSTP's */
static volatile sig_atomic_t worker;              /* its process (and process group) id, once it started */
static volatile sig_atomic_t pending[16];         /* signals that came before it started */
static volatile sig_atomic_t pending_count;

/* Becomes the console script, which does all this launcher does not. */
_Noreturn static void fall_back(void) {
    execv(SVC_FALLBACK, arguments);
    fprintf(stderr, "Error: cannot run %s: %s; reinstall svc (scripts/install.sh)\n", SVC_FALLBACK, strerror(errno));
    _exit(1);
}

static int server_wanted(int argc, char **argv) {
    const char *setting = getenv("SVC_CLI_SERVER");
    if (setting != NULL) {
        char word[8] = {0};
        size_t length = 0;
        while (isspace((unsigned char)*setting)) setting++;
        while (*setting && !isspace((unsigned char)*setting) && length < sizeof word - 1)
            word[length++] = (char)tolower((unsigned char)*setting++);
        while (isspace((unsigned char)*setting)) setting++;
        if (*setting == '\0' && (!strcmp(word, "off") || !strcmp(word, "0") || !strcmp(word, "false") ||
                                 !strcmp(word, "no")))
            return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "agent") && !strcmp(argv[2], "start")) return 0; /* becomes the agent */
    if (argc >= 2 && !strcmp(argv[1], "upgrade")) return 0;  /* replaces the installation the server runs */
    for (int i = 1; i < argc; i++)  /* these look for the user's shell among the command's parent processes */
        if (!strcmp(argv[i], "--install-completion") || !strcmp(argv[i], "--show-completion")) return 0;
    return 1;
}

/* Whether Python would start as the server did: a variable that may change its flags, import path or options
   means another server (its key says so, which only Python can compute). Those a worker follows itself are not. */
static int plain_python(void) {
    static const char *const followed[] = {"PYTHONIOENCODING=", "PYTHONUNBUFFERED=", "PYTHONDONTWRITEBYTECODE="};
    for (char **entry = environ; *entry; entry++) {
        if (strncmp(*entry, "PYTHON", 6)) continue;
        size_t i = 0;
        while (i < sizeof followed / sizeof followed[0] && strncmp(*entry, followed[i], strlen(followed[i]))) i++;
        if (i == sizeof followed / sizeof followed[0]) return 0;
    }
    return 1;
}

/* As ``svc.handoff.runtime_dir``: $XDG_RUNTIME_DIR/svc, else svc-UID in the temporary directory; only a directory
   of this user's that only they can enter. */
static int runtime_dir(char *path, size_t size) {
    const char *base = getenv("XDG_RUNTIME_DIR");
    int written;
    if (base != NULL && *base) {
        written = snprintf(path, size, "%s/svc", base);
    } else {
        const char *temporary = getenv("TMPDIR");
        written = snprintf(path, size, "%s/svc-%u", temporary && *temporary ? temporary : "/tmp", (unsigned)getuid());
    }
    if (written < 0 || (size_t)written >= size) return 0;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) return 0;
    struct stat found;
    return lstat(path, &found) == 0 && S_ISDIR(found.st_mode) && found.st_uid == getuid() && !(found.st_mode & 077);
}

static void forward(int number) {
    int saved = errno;
    if (worker) {
        killpg(worker, number);
    } else if (pending_count < (sig_atomic_t)(sizeof pending / sizeof pending[0])) {
        pending[pending_count] = number;
        pending_count = pending_count + 1;
    }
    errno = saved;
}

static void install_suspend(void);

/* Ctrl-Z stops the worker with this process, and ``fg`` continues both. */
static void suspend(int number) {
    int saved = errno;
    (void)number;
    if (worker) killpg(worker, SIGSTOP);
    struct sigaction plain = {.sa_handler = SIG_DFL};
    sigaction(SIGTSTP, &plain, NULL);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTSTP);
    sigprocmask(SIG_UNBLOCK, &mask, NULL);
    kill(getpid(), SIGTSTP); /* stops here until continued */
    install_suspend();
    if (worker) killpg(worker, SIGCONT);
    errno = saved;
}

/* A handler runs with every forwarded signal held back: one never interrupts another's bookkeeping. */
static void install(int number, void (*handler)(int), struct sigaction *before) {
    struct sigaction action = {.sa_handler = handler, .sa_flags = SA_RESTART};
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < FORWARDED; i++) sigaddset(&action.sa_mask, forwarded[i]);
    sigaction(number, &action, before);
}

static void install_suspend(void) { install(SIGTSTP, suspend, NULL); }

static void take_signals(void) {
    for (size_t i = 0; i < FORWARDED; i++) install(forwarded[i], forward, &previous[i]);
    sigaction(SIGTSTP, NULL, &previous[FORWARDED]);
    install_suspend();
}

/* The worker started: the signals that came before are its now. */
static void started(int pid) {
    sigset_t mask, before;
    sigemptyset(&mask);
    for (size_t i = 0; i < FORWARDED; i++) sigaddset(&mask, forwarded[i]);
    sigprocmask(SIG_BLOCK, &mask, &before);
    worker = pid;
    for (sig_atomic_t i = 0; i < pending_count; i++) killpg(pid, pending[i]);
    sigprocmask(SIG_SETMASK, &before, NULL);
}

_Noreturn static void end_by(int number) {
    signal(number, SIG_DFL);
    kill(getpid(), number);
    _exit(128 + number);
}

/* No worker took the command: the signals are this process's again; one that came meanwhile ends it, having run
   nothing; else the console script runs the command. */
_Noreturn static void give_back(int connection) {
    for (size_t i = 0; i < FORWARDED; i++) sigaction(forwarded[i], &previous[i], NULL);
    sigaction(SIGTSTP, &previous[FORWARDED], NULL);
    close(connection);
    if (pending_count) end_by(pending[0]);
    fall_back();
}

/* A growing buffer of the request's NUL-ended fields. */
struct buffer {
    char *data;
    size_t length, size;
};

static void add(struct buffer *buffer, const char *field, size_t length) {
    if (buffer->length + length + 1 > buffer->size) {
        size_t size = (buffer->size + length + 1) * 2;
        char *data = realloc(buffer->data, size);
        if (data == NULL) fall_back();
        buffer->data = data;
        buffer->size = size;
    }
    memcpy(buffer->data + buffer->length, field, length);
    buffer->data[buffer->length + length] = '\0';
    buffer->length += length + 1;
}

static void add_text(struct buffer *buffer, const char *field) { add(buffer, field, strlen(field)); }

/* The request, after its size in 4 bytes (see ``svc.handoff``); the stream encodings left for the worker to work
   out. */
static struct buffer request(int argc, char **argv) {
    struct buffer buffer = {.data = malloc(4096), .length = 4, .size = 4096}; /* the size goes in the first 4 */
    char number[32];
    char *cwd = getcwd(NULL, 0);
    if (buffer.data == NULL || cwd == NULL) fall_back();
    mode_t mask = umask(077);
    umask(mask);
    add_text(&buffer, SVC_KEY);
    add_text(&buffer, cwd);
    free(cwd);
    snprintf(number, sizeof number, "%o", (unsigned)mask);
    add_text(&buffer, number);
    add_text(&buffer, "");
    snprintf(number, sizeof number, "%d", argc - 1);
    add_text(&buffer, number);
    for (int i = 1; i < argc; i++) add_text(&buffer, argv[i]);
    for (char **entry = environ; *entry; entry++) {
        const char *equals = strchr(*entry, '=');
        if (equals != NULL && equals != *entry) add_text(&buffer, *entry); /* as Python's os.environ reads it */
    }
    uint32_t size = (uint32_t)(buffer.length - 4);
    for (int i = 0; i < 4; i++) buffer.data[i] = (char)(size >> (8 * (3 - i)));
    return buffer;
}

/* Sends the request with the standard streams' descriptors; 0 when the server went away before it took it. */
static int send_request(int connection, struct buffer *message) {
    int streams[3] = {0, 1, 2};
    union {
        char space[CMSG_SPACE(sizeof streams)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct iovec part = {.iov_base = message->data, .iov_len = message->length};
    struct msghdr header = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space,
                            .msg_controllen = sizeof control.space};
    struct cmsghdr *rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof streams);
    memcpy(CMSG_DATA(rights), streams, sizeof streams);
    ssize_t sent;
    do sent = sendmsg(connection, &header, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent <= 0) return 0;
    /* Never a send of nothing once all is sent: the command may have run and the server closed the connection. */
    for (size_t done = (size_t)sent; done < message->length;) {
        ssize_t more = send(connection, message->data + done, message->length - done, MSG_NOSIGNAL);
        if (more < 0 && errno == EINTR) continue;
        if (more <= 0) return 0;
        done += (size_t)more;
    }
    return 1;
}

/* The server's next answer (``svc.handoff.record``): 1 with its kind and value, 0 when the connection ended. */
static int read_record(int connection, int32_t *kind, int32_t *value) {
    unsigned char data[RECORD];
    size_t got = 0;
    while (got < RECORD) {
        ssize_t read = recv(connection, data + got, RECORD - got, 0);
        if (read < 0 && errno == EINTR) continue;
        if (read <= 0) return 0;
        got += (size_t)read;
    }
    *kind = (int32_t)((uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3]);
    *value = (int32_t)((uint32_t)data[4] << 24 | (uint32_t)data[5] << 16 | (uint32_t)data[6] << 8 | data[7]);
    return 1;
}

int main(int argc, char **argv) {
    arguments = argv;
    char path[sizeof ((struct sockaddr_un *)0)->sun_path];
    if (!server_wanted(argc, argv) || !plain_python() || !runtime_dir(path, sizeof path)) fall_back();
    for (int descriptor = 0; descriptor < 3; descriptor++) /* a closed standard stream: run the command there */
        if (fcntl(descriptor, F_GETFD) < 0) fall_back();
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    int length = snprintf(address.sun_path, sizeof address.sun_path, "%s/%s", path, SVC_SOCKET_NAME);
    if (length < 0 || (size_t)length >= sizeof address.sun_path) fall_back();
    int connection = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connection < 0) fall_back();
    if (connect(connection, (struct sockaddr *)&address, sizeof address) != 0) {
        close(connection);
        fall_back(); /* no server: the console script starts one */
    }
    struct buffer message = request(argc, argv);
    take_signals(); /* from the request on, a Ctrl-C is the worker's, even one pressed before it started */
    int32_t kind = 0, value = 0;
    if (!send_request(connection, &message) || !read_record(connection, &kind, &value) || kind != STARTED)
        give_back(connection);
    started(value);
    int pid = value;
    if (read_record(connection, &kind, &value) && kind == EXITED) {
        if (value < 0) end_by(-value); /* ended by a signal: end the same way, as a shell would see it */
        _exit(value);
    }
    killpg(pid, SIGHUP); /* as a terminal's hang-up would: the worker must not run on unseen */
    fputs("Error: the svc CLI server stopped while it ran this command; run it again (SVC_CLI_SERVER=off runs "
          "commands without it)\n", stderr);
    return 1;
}
