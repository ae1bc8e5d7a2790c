//! `fixscope live --tui` in a real terminal: a tmux pane this test creates (and kills)
//! runs the binary on lo against the simulator; the test types keys with `tmux send-keys`,
//! reads the screen with `tmux capture-pane`, and checks that the terminal is given back
//! (tmux's `alternate_on` flag, the pane's tty modes from `stty`) on `q`, on SIGTERM and
//! on a panic. Needs root (BPF) and tmux: without them the tests fail loudly.

mod support;
// Shared with live_e2e, which uses what this file does not.
#[allow(unused_imports)]
mod support_live;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support_live::*;

/// A tmux session running one shell command; killed (ours, by name) when dropped.
struct Pane {
    tmux: TmuxSession,
    rc: PathBuf,
    err: PathBuf,
}

impl Pane {
    /// Runs `fixscope ARGS` in a new 160x45 pane; its exit code goes to a file, and the
    /// pane stays (a bounded sleep) so the restored screen can be read.
    fn start(dir: &Path, name: &str, args: &[&str], env: &str) -> Pane {
        let session = format!("fxs-{name}-{}", std::process::id());
        let rc = dir.join(format!("{name}.rc"));
        let err = dir.join(format!("{name}.err"));
        // `env` set: stderr stays on the terminal (a panic's message must be readable there).
        let redirect = if env.is_empty() {
            format!("2>{}", err.display())
        } else {
            String::new()
        };
        let shell = format!(
            "{env} {} {} {redirect}; echo $? >{}; sleep 120",
            BIN,
            args.join(" "),
            rc.display()
        );
        let tmux = TmuxSession::start(session, 160, 45, &shell);
        Pane { tmux, rc, err }
    }

    fn screen(&self) -> String {
        run("tmux", &["capture-pane", "-p", "-t", &self.tmux.name])
    }

    /// The normal screen with its scrolled-off lines (after the UI ended).
    fn history(&self) -> String {
        run(
            "tmux",
            &["capture-pane", "-p", "-S", "-", "-t", &self.tmux.name],
        )
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.tmux.name.as_str()];
        args.extend_from_slice(keys);
        run("tmux", &args);
    }

    fn format(&self, what: &str) -> String {
        run(
            "tmux",
            &["display-message", "-p", "-t", &self.tmux.name, what],
        )
        .trim()
        .to_string()
    }

    /// Whether the pane shows the alternate screen (the UI's) rather than the normal one.
    fn alternate_on(&self) -> bool {
        self.format("#{alternate_on}") == "1"
    }

    /// The pane's terminal modes as `stty -a` prints them.
    fn tty_modes(&self) -> String {
        let tty = self.format("#{pane_tty}");
        let out = Command::new("stty")
            .args(["-a", "-F", &tty])
            .output()
            .expect("stty");
        assert!(out.status.success(), "stty -F {tty}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// fixscope's pid: the child of the pane's shell.
    fn fixscope_pid(&self) -> u32 {
        let shell = self.format("#{pane_pid}");
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
            .unwrap_or_default();
        let pid = children
            .split_whitespace()
            .find_map(|p| p.parse::<u32>().ok())
            .unwrap_or_else(|| panic!("no child of the pane's shell {shell}"));
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        assert_eq!(comm.trim(), "fixscope", "pid {pid}");
        pid
    }

    fn exit_code(&self) -> String {
        std::fs::read_to_string(&self.rc)
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    fn wait_screen(&self, what: &str, needle: &str) {
        let mut last = String::new();
        let found = (0..500).any(|_| {
            last = self.screen();
            if last.contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
            false
        });
        assert!(
            found,
            "{what}: {needle:?} not on screen:\n{last}\n{}",
            self.stderr()
        );
    }

    fn wait_exit(&self) -> String {
        wait_until("fixscope exited", Duration::from_secs(15), || {
            !self.exit_code().is_empty()
        });
        self.exit_code()
    }

    /// The terminal is as before the UI: normal screen, line editing and echo back on.
    fn assert_restored(&self) {
        assert!(!self.alternate_on(), "still on the alternate screen");
        let modes = self.tty_modes();
        for mode in ["icanon", "echo", "isig", "opost"] {
            assert!(
                modes.split_whitespace().any(|m| m == mode),
                "{mode} not restored: {modes}"
            );
        }
        assert_eq!(self.format("#{cursor_flag}"), "1", "cursor hidden");
    }
}

fn send_orders(exchange: &Exchange, count: &str) {
    run_client(
        None,
        exchange,
        &["--sessions", "2", "--rate", "2000", "--count", count],
        Duration::from_secs(30),
    );
}

/// The UI on screen with live figures; TAB switches views (the `by` view with `--by 49`),
/// `?` shows the help, SPACE and
/// `r` reach the driver (a summary line in --json-file, the statistics reset), `q` quits
/// with exit code 0, the terminal restored and the final summary printed on it.
#[test]
fn tui_keys_views_and_quit_in_a_terminal() {
    require_root("tui_keys_views_and_quit_in_a_terminal");
    require_tool("tui_keys_views_and_quit_in_a_terminal", "tmux");
    require_tool("tui_keys_views_and_quit_in_a_terminal", "stty");
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let exchange = start_exchange(None, "127.0.0.1:0", &dir.path().join("truth.csv"), &[]);
    let port = exchange.addr.port().to_string();
    let json = dir.path().join("run.json");
    let json_arg = json.to_str().expect("utf-8");
    let pane = Pane::start(
        dir.path(),
        "tui-keys",
        &[
            "live",
            "-i",
            "lo",
            "-p",
            &port,
            "--tui",
            "-r",
            "0.5",
            "--duration",
            "60",
            "--json-file",
            json_arg,
            "--by",
            "49",
        ],
        "",
    );
    wait_until("fixscope attached", Duration::from_secs(15), || {
        pane.stderr().contains("fixscope: watching")
    });
    pane.wait_screen("the UI", "summary | stages | histogram");
    assert!(pane.alternate_on(), "the UI uses the alternate screen");
    assert!(
        pane.tty_modes().split_whitespace().any(|m| m == "-icanon"),
        "raw mode while the UI runs"
    );

    send_orders(&exchange, "1000");
    pane.wait_screen("orders counted", "matched 1000");
    pane.wait_screen("cumulative table", "first_response     1000");

    pane.keys(&["Tab"]);
    pane.wait_screen("TAB: the stages view", " ack_to_fill p50 ");
    assert!(!pane.screen().contains("cumulative: "), "{}", pane.screen());
    pane.keys(&["Tab", "Tab"]);
    pane.wait_screen("the sessions view", "CLIENT2->EXCH");
    // The `by` view (#21): per SenderCompID (--by 49), every stage.
    pane.keys(&["Tab"]);
    pane.wait_screen("the by view", "49=CLIENT2 ack_to_fill");
    pane.keys(&["BTab", "BTab", "BTab", "BTab"]);
    pane.wait_screen("back to the summary", "cumulative: ");

    pane.keys(&["?"]);
    pane.wait_screen("help on '?'", "┌ help ");
    pane.keys(&["x"]);
    wait_until("help closed", Duration::from_secs(5), || {
        !pane.screen().contains("┌ help ")
    });

    // SPACE: a summary now, to every output (the JSON file too).
    let summaries = || {
        std::fs::read_to_string(&json)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"type\":\"summary\""))
            .count()
    };
    assert_eq!(summaries(), 0);
    pane.keys(&["Space"]);
    pane.wait_screen("SPACE noted", "summary at ");
    wait_until(
        "SPACE's summary in --json-file",
        Duration::from_secs(5),
        || summaries() == 1,
    );

    pane.keys(&["r"]);
    pane.wait_screen("reset noted", "statistics reset at ");
    pane.wait_screen("the table emptied", "first_response     0 ");

    pane.keys(&["q"]);
    assert_eq!(pane.wait_exit(), "0", "{}", pane.stderr());
    pane.assert_restored();
    let screen = pane.history();
    assert!(screen.contains("=== fixscope summary"), "{screen}");
    assert!(!screen.contains("summary | stages"), "{screen}");
    assert_eq!(summaries(), 2, "SPACE's and the final one");
    drop(exchange);
}

/// SIGTERM (the driver's stop flag) and a panic (the hook) both give the terminal back.
#[test]
fn tui_restores_the_terminal_on_sigterm_and_on_a_panic() {
    require_root("tui_restores_the_terminal_on_sigterm_and_on_a_panic");
    require_tool(
        "tui_restores_the_terminal_on_sigterm_and_on_a_panic",
        "tmux",
    );
    require_tool(
        "tui_restores_the_terminal_on_sigterm_and_on_a_panic",
        "stty",
    );
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let exchange = start_exchange(None, "127.0.0.1:0", &dir.path().join("truth.csv"), &[]);
    let port = exchange.addr.port().to_string();
    let args = ["live", "-i", "lo", "-p", &port, "--tui", "--duration", "60"];

    let pane = Pane::start(dir.path(), "tui-term", &args, "");
    pane.wait_screen("the UI", "summary | stages | histogram");
    let pid = pane.fixscope_pid();
    // SAFETY: kill(2) on the pid of the fixscope this test started (checked by its comm).
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) }, 0);
    assert_eq!(pane.wait_exit(), "0", "{}", pane.stderr());
    pane.assert_restored();
    assert!(
        pane.history().contains("=== fixscope summary"),
        "{}",
        pane.history()
    );

    // The binary under test is a debug build, which panics on its first redraw when told to.
    let pane = Pane::start(dir.path(), "tui-panic", &args, "FIXSCOPE_TUI_TEST_PANIC=1");
    assert_eq!(pane.wait_exit(), "101", "{}", pane.history());
    pane.assert_restored();
    // The hook restored the screen before the message was printed: it is on the normal
    // screen, not lost with the alternate one.
    let screen = pane.history();
    assert!(
        screen.contains("FIXSCOPE_TUI_TEST_PANIC is set"),
        "{screen}"
    );
    drop(exchange);
}

/// `--tui` without a terminal on stdout: a clear error before anything is attached.
#[test]
fn tui_without_a_terminal_is_an_error() {
    let out = fixscope_cmd(None, &["live", "-i", "lo", "-p", "9", "--tui"])
        .output()
        .expect("fixscope");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tui needs a terminal on stdout"), "{err}");
    assert!(out.stdout.is_empty(), "{out:?}");
}
