//! `fixscope live --tui`: a full-screen view of the live figures, built with ratatui.
//!
//! Two halves share one [`Model`]:
//! - [`TuiFeed`] is a `Reporter` in the run's `Fanout` (in place of the stdout reporter): it
//!   puts every interval and summary into the model while the screen is up, and hands them
//!   to the stdout reporter it holds once the screen is closed — so the final summary is
//!   printed on the normal terminal as without `--tui`;
//! - [`Tui`] is driven by the driver's loop: it owns the terminal, reads the keys (SPACE,
//!   `r` and quit go back to the driver, which acts on them as in line mode; TAB and `?` are
//!   its own), refreshes the cumulative summary once a second and redraws four times a
//!   second. All of it runs on the loop's thread between two polls of the ring; the cost
//!   of the last redraw and summary is shown in the footer.

mod alarms;
mod by;
mod model;
mod panels;
mod session_layer;
pub mod slowest;
mod stage_table;
mod style;
mod terminal;
#[cfg(test)]
mod tests;
mod view;

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use fixscope_core::report::{IntervalReport, Reporter, SummaryReport};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind};

use crate::keys::{command, Key};
pub use model::Model;
pub use terminal::check_terminal;
use terminal::Screen;
use view::Ui;
pub use view::View;

/// How often the screen is redrawn.
const DRAW_EVERY: Duration = Duration::from_millis(250);
/// How often the cumulative summary (percentile table, histogram, sessions) is rebuilt.
const SUMMARY_EVERY: Duration = Duration::from_secs(1);
/// Most terminal events handled per poll (a pasted text cannot stall the loop).
const EVENTS_PER_POLL: usize = 64;

struct Shared {
    model: Model,
    on_screen: bool,
    /// The screen was up: it showed the intervals, so stdout gets none of them afterwards
    /// (the run's last, partial one would stand alone before the summary).
    shown: bool,
}

/// The reporter half: see the module documentation.
pub struct TuiFeed {
    shared: Rc<RefCell<Shared>>,
    stdout: Box<dyn Reporter>,
}

impl Reporter for TuiFeed {
    fn interval(&mut self, report: &IntervalReport<'_>) -> io::Result<()> {
        let on_screen = {
            let mut s = self.shared.borrow_mut();
            s.model.on_interval(report);
            s.on_screen
        };
        if on_screen || self.shared.borrow().shown {
            Ok(())
        } else {
            self.stdout.interval(report)
        }
    }

    fn summary(&mut self, report: &SummaryReport<'_>) -> io::Result<()> {
        let on_screen = {
            let mut s = self.shared.borrow_mut();
            s.model.on_summary(report);
            s.on_screen
        };
        if on_screen {
            Ok(())
        } else {
            self.stdout.summary(report)
        }
    }
}

/// Updates the model only: the once-a-second summary goes nowhere else.
struct ModelOnly<'a>(&'a RefCell<Shared>);

impl Reporter for ModelOnly<'_> {
    fn interval(&mut self, report: &IntervalReport<'_>) -> io::Result<()> {
        self.0.borrow_mut().model.on_interval(report);
        Ok(())
    }

    fn summary(&mut self, report: &SummaryReport<'_>) -> io::Result<()> {
        self.0.borrow_mut().model.on_summary(report);
        Ok(())
    }
}

/// The screen half: see the module documentation.
pub struct Tui {
    shared: Rc<RefCell<Shared>>,
    ui: Ui,
    screen: Option<Screen>,
    next_draw: Instant,
    next_summary: Instant,
}

impl Tui {
    /// The UI and the reporter that feeds it; `stdout` prints once the screen is closed.
    pub fn new(stdout: Box<dyn Reporter>) -> (Tui, TuiFeed) {
        let shared = Rc::new(RefCell::new(Shared {
            model: Model::new("fixscope live"),
            on_screen: false,
            shown: false,
        }));
        let now = Instant::now();
        let tui = Tui {
            shared: Rc::clone(&shared),
            ui: Ui::default(),
            screen: None,
            next_draw: now,
            next_summary: now,
        };
        (tui, TuiFeed { shared, stdout })
    }

    /// What the header says is watched.
    pub fn set_title(&mut self, title: String) {
        self.shared.borrow_mut().model.title = title;
    }

    /// Takes over the terminal.
    pub fn enter(&mut self) -> io::Result<()> {
        self.screen = Some(Screen::enter()?);
        let mut shared = self.shared.borrow_mut();
        shared.on_screen = true;
        shared.shown = true;
        drop(shared);
        self.next_draw = Instant::now();
        self.draw()
    }

    /// Gives the terminal back; reports go to stdout from now on.
    pub fn leave(&mut self) {
        self.screen = None;
        let mut shared = self.shared.borrow_mut();
        shared.shown |= shared.on_screen;
        shared.on_screen = false;
    }

    /// The next key for the driver (summary, reset, quit), after handling the UI's own
    /// keys (views, help) and terminal resizes; never waits.
    pub fn poll_key(&mut self) -> io::Result<Option<Key>> {
        for _ in 0..EVENTS_PER_POLL {
            if !event::poll(Duration::ZERO)? {
                break;
            }
            match event::read()? {
                Event::Key(k) => {
                    if let Some(key) = self.on_key(&k) {
                        return Ok(Some(key));
                    }
                }
                Event::Resize(..) => self.next_draw = Instant::now(),
                _ => {}
            }
        }
        Ok(None)
    }

    /// Handles the UI's own keys; returns those for the driver.
    fn on_key(&mut self, k: &KeyEvent) -> Option<Key> {
        if k.kind != KeyEventKind::Press {
            return None;
        }
        self.next_draw = Instant::now();
        let key = command(k);
        if self.ui.help {
            // Any key closes the help; only `q` and Ctrl-C still quit from it.
            self.ui.help = false;
            let quits = key == Some(Key::Quit) && k.code != KeyCode::Esc;
            return quits.then_some(Key::Quit);
        }
        match key? {
            Key::Help => self.ui.help = true,
            Key::NextView => self.ui.view = self.ui.view.next(),
            Key::PreviousView => self.ui.view = self.ui.view.previous(),
            driver => return Some(driver),
        }
        None
    }

    /// Says what a key did, in the footer.
    pub fn note(&mut self, note: impl Into<String>) {
        self.ui.note = Some(note.into());
        self.next_draw = Instant::now();
    }

    /// Shows a view (SPACE shows the summary).
    pub fn show(&mut self, view: View) {
        self.ui.view = view;
        self.next_draw = Instant::now();
    }

    pub fn summary_due(&self) -> bool {
        Instant::now() >= self.next_summary
    }

    /// Rebuilds the cumulative figures now: `build` sends a summary to the reporter it is
    /// given (the model only, not the other outputs).
    pub fn refresh_summary(
        &mut self,
        build: impl FnOnce(&mut dyn Reporter) -> io::Result<()>,
    ) -> io::Result<()> {
        let started = Instant::now();
        let cpu = thread_cpu_time();
        build(&mut ModelOnly(&self.shared))?;
        self.ui.summary_cost = thread_cpu_time().saturating_sub(cpu);
        self.next_summary = started + SUMMARY_EVERY;
        Ok(())
    }

    /// Redraws if it is time to.
    pub fn tick(&mut self) -> io::Result<()> {
        if Instant::now() >= self.next_draw {
            self.draw()?;
        }
        Ok(())
    }

    fn draw(&mut self) -> io::Result<()> {
        self.next_draw = Instant::now() + DRAW_EVERY;
        let Some(screen) = &mut self.screen else {
            return Ok(());
        };
        let cpu = thread_cpu_time();
        let shared = self.shared.borrow();
        let ui = &self.ui;
        screen
            .terminal
            .draw(|frame| view::render(frame, &shared.model, ui))?;
        self.ui.draw_cost = thread_cpu_time().saturating_sub(cpu);
        // Debug builds only: lets the tmux test check that a panic gives the terminal back.
        #[cfg(debug_assertions)]
        if std::env::var_os("FIXSCOPE_TUI_TEST_PANIC").is_some() {
            panic!("FIXSCOPE_TUI_TEST_PANIC is set");
        }
        Ok(())
    }
}

/// CPU time of the calling thread: what the UI's work costs the consumer loop, without the
/// time other processes had the CPU (the consumer may run at SCHED_IDLE).
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own; CLOCK_THREAD_CPUTIME_ID exists on
    // every Linux fixscope runs on (on failure `t` stays zero and the cost reads 0).
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t);
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}
