//! The console (cli's; `report::terminal` draws the texts): data goes to stdout through one writer, everything else to stderr behind one
//! `headroom:` prefix, and the errors a command returns become the exit codes of docs/ARCHITECTURE.md:
//! 0 success, 1 failure, 2 usage error, 128 + signal when interrupted.
//!
//! A closed stdout (`headroom audit | head -1`) is not a failure: the reader has what it
//! wanted. The writer returns it as [`StdoutClosed`], which travels up like any error, so the
//! command's cleanup (temp files, stress workers) runs on the way, and `main` exits 0 without
//! a word. Nothing here calls `process::exit`.

// The one module that prints: everything else goes through it (main.rs denies the print
// macros in the rest of the crate).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;

/// A bad flag or value (`-p 100`, `--stress gpu=1`): one sentence, exit 2, as clap's own
/// usage errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A usage error as the `anyhow::Error` a command returns.
pub fn usage(sentence: impl Into<String>) -> anyhow::Error {
    UsageError(sentence.into()).into()
}

/// A failure with an exit code of its own: 126 when the counted command cannot be run, 127
/// when it is not found, as perf and shells say it.
#[derive(Debug)]
pub struct CodedError {
    pub code: u8,
    pub message: String,
}

impl fmt::Display for CodedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CodedError {}

/// The run was stopped by a signal after it kept what it measured: exit 128 + the signal's
/// number (130 for Ctrl-C, 143 for SIGTERM), as shells report it.
#[derive(Debug)]
pub struct Interrupted {
    pub signal: i32,
    /// What happened to the results, e.g. "the results above are those measured before it".
    pub kept: String,
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "interrupted by {}", signal_name(self.signal))?;
        if !self.kept.is_empty() {
            write!(f, ": {}", self.kept)?;
        }
        Ok(())
    }
}

impl std::error::Error for Interrupted {}

/// `SIGINT (Ctrl-C)`, `SIGTERM`, ...: the name a user reads in `kill -l`.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT (Ctrl-C)".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        n => format!("signal {n}"),
    }
}

/// Stdout's reader went away (EPIPE): the end of the output, not a failure.
#[derive(Debug)]
pub struct StdoutClosed;

impl fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("stdout was closed by its reader")
    }
}

impl std::error::Error for StdoutClosed {}

/// Whether stdout is coloured (`--color`, NO_COLOR, a terminal): the writer turns
/// headroom's own colour marks into colours only then.
static COLOUR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set once the command line is read.
pub fn set_colour(on: bool) {
    COLOUR.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Write to stdout and flush. A closed pipe is returned as [`StdoutClosed`]; use it through
/// [`out!`](crate::out) and [`outln!`](crate::outln), which read like `print!`/`println!`.
/// Every text passes [`report::outside::for_terminal`]: a control character from a peer, a
/// document or sysfs is shown escaped, never acted on by the terminal (headroom's own colour
/// sequences included: only its renderers' marks become colours).
pub fn write_stdout(args: fmt::Arguments<'_>) -> anyhow::Result<()> {
    let text = args.to_string();
    let colour = COLOUR.load(std::sync::atomic::Ordering::Relaxed);
    write_raw(&report::outside::for_terminal(&text, colour))
}

/// A machine format on stdout (JSON, the OpenMetrics and Prometheus texts, LAVA lines, KCIDB,
/// OCPTV), written as it is: each format escapes what it carries in its own syntax
/// (`report::outside::json`, `report::outside::label_value`, LAVA's name grammar), and the
/// terminal's escaping on top would break it (`\x1b` in a label value is an escape promtool
/// rejects, `\u{9b}` in a JSON string is no JSON).
pub fn write_data(text: &str) -> anyhow::Result<()> {
    write_raw(text)
}

fn write_raw(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// `print!` that returns a closed stdout as an error instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::console::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` that returns a closed stdout as an error instead of panicking.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::console::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::console::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `headroom: {kind}{message}` on stderr, escaped as stdout is (no colour on stderr: a
/// styled text's marks are dropped). A closed stderr loses the message, never the run.
fn say(kind: &str, message: fmt::Arguments<'_>) {
    let text = message.to_string();
    let _ = writeln!(
        std::io::stderr().lock(),
        "headroom: {kind}{}",
        report::outside::for_terminal(&text, false)
    );
}

/// A progress line on stderr, redrawn in place (`\r`, erase the line): only where stderr is
/// a terminal, which the caller checks. The line is escaped as every message is.
pub fn progress(line: impl fmt::Display) {
    let text = line.to_string();
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "\r\x1b[K{}", report::outside::for_terminal(&text, false));
    let _ = e.flush();
}

/// A block of live lines on stderr redrawn in place (bench latency's cyclictest lines): the
/// cursor goes back up over the `drawn` lines of the last block, each line is escaped as
/// every message is and erased to its end. Only where stderr is a terminal, which the caller
/// checks. Returns how many lines it drew, for the next call.
pub fn redraw<T: fmt::Display>(drawn: usize, lines: impl IntoIterator<Item = T>) -> usize {
    let (text, count) = redrawn(drawn, lines);
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes()).and_then(|()| e.flush());
    count
}

/// What [`redraw`] writes, and how many lines.
fn redrawn<T: fmt::Display>(drawn: usize, lines: impl IntoIterator<Item = T>) -> (String, usize) {
    let mut out = if drawn > 0 {
        format!("\x1b[{drawn}A")
    } else {
        String::new()
    };
    let mut count = 0;
    for line in lines {
        let text = line.to_string();
        out.push_str(&report::outside::for_terminal(&text, false));
        out.push_str("\x1b[K\n");
        count += 1;
    }
    (out, count)
}

/// Erase the progress line.
pub fn progress_done() {
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "\r\x1b[K");
    let _ = e.flush();
}

/// A text of several lines on stderr as it is (escaped), without the `headroom:` prefix:
/// what a command shows before it starts (the survey's plan).
pub fn text(text: impl fmt::Display) {
    let text = text.to_string();
    let _ = write!(
        std::io::stderr().lock(),
        "{}",
        report::outside::for_terminal(&text, false)
    );
}

/// `headroom: warning: ...` on stderr.
pub fn warn(message: impl fmt::Display) {
    say("warning: ", format_args!("{message}"));
}

/// `headroom: error: ...` on stderr, for an error after which the work goes on.
pub fn error(message: impl fmt::Display) {
    say("error: ", format_args!("{message}"));
}

/// `headroom: note: ...` on stderr: what headroom did with the command line.
pub fn note(message: impl fmt::Display) {
    say("note: ", format_args!("{message}"));
}

/// `headroom: ...` on stderr: progress and what happened to the results.
pub fn info(message: impl fmt::Display) {
    say("", format_args!("{message}"));
}

/// Ask for a password on the controlling terminal with echo off, as iperf3 does
/// (iperf_getpass): the prompt on the terminal, one line back (at most 1 KiB). An error when
/// there is no terminal.
pub fn ask_password(prompt: &str) -> std::io::Result<String> {
    use std::io::{BufRead as _, Read as _};
    use std::os::fd::AsRawFd as _;
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")?;
    let fd = tty.as_raw_fd();
    // SAFETY: termios is plain old data that tcgetattr fills.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: fd is the open terminal; saved is a valid termios.
    if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut quiet = saved;
    quiet.c_lflag &= !libc::ECHO;
    quiet.c_lflag |= libc::ECHONL;
    // SAFETY: as above; the saved state is put back below.
    if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &quiet) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut line = String::new();
    let read = (&tty)
        .write_all(prompt.as_bytes())
        .and_then(|()| std::io::BufReader::new((&tty).take(1024)).read_line(&mut line));
    // SAFETY: restores the terminal state read above.
    unsafe { libc::tcsetattr(fd, libc::TCSANOW, &saved) };
    read?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

/// clap's answer to a command line it did not take: help and version on stdout (exit 0) as
/// clap prints them; an error on stderr behind the `headroom:` prefix every other message
/// carries (`headroom: error: unexpected argument '--bs' found` and clap's usage lines),
/// exit 2.
pub fn clap_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // A closed stdout (`headroom --help | head -1`) is no failure.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        // `headroom bench` alone: the command's help, on stderr, as a usage error.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::from(2);
        }
        _ => {}
    }
    let text = match flag_value_reason(e) {
        Some(line) => format!("error: {line}\n\nFor more information, try '--help'.\n"),
        None => e.render().to_string(),
    };
    let _ = write!(std::io::stderr().lock(), "headroom: {text}");
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

/// A flag's value that its parser refused, in the one style of every flag's refusal, whether
/// clap or the command parsed it: `--duration abc: not a duration: give a number with an
/// optional unit, e.g. 10s, 500ms, 5m, 2h`. `None` for any other error.
fn flag_value_reason(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let arg = match e.get(ContextKind::InvalidArg)? {
        ContextValue::String(a) => a.clone(),
        _ => return None,
    };
    let value = match e.get(ContextKind::InvalidValue)? {
        ContextValue::String(v) => v.clone(),
        _ => return None,
    };
    // `--threads [<N>]`, `--duration <TIME>`, `<TARGET>`: the flag, or the argument's name.
    let flag = if arg.starts_with('-') {
        arg.split_whitespace().next().unwrap_or(&arg).to_string()
    } else {
        arg
    };
    let reason = plain_number_reason(e)?;
    Some(format!("{flag} {value}: {reason}"))
}

/// Why a value was refused: a number flag given something else (`-t x`, `-i 1k`) gets what
/// the flag takes, not the standard library's "invalid digit found in string"; any other
/// parser's reason as it said it.
fn plain_number_reason(e: &clap::Error) -> Option<String> {
    use std::num::IntErrorKind;
    let source = std::error::Error::source(e)?;
    let reason = if let Some(int) = source.downcast_ref::<std::num::ParseIntError>() {
        match int.kind() {
            IntErrorKind::InvalidDigit => {
                "not a whole number: give digits only, without a unit or a sign, e.g. 4"
            }
            IntErrorKind::Empty => "empty: give a whole number, e.g. 4",
            IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => {
                "out of range for this flag: give a smaller number"
            }
            _ => return Some(source.to_string()),
        }
    } else if source.is::<std::num::ParseFloatError>() {
        "not a number: give digits, with a decimal point if needed, e.g. 2.5"
    } else {
        return Some(source.to_string()).filter(|s| !s.is_empty());
    };
    Some(reason.to_string())
}

/// An error and its causes as one sentence, `what: why: why`, as anyhow's `{:#}` writes it,
/// except that a cause whose words the text already holds is not repeated. An error whose
/// message includes its source (thiserror's `#[error("cannot read {path}: {source}")]` with a
/// `source` field, the usual way) would otherwise read "cannot read /tmp: Is a directory (os
/// error 21): Is a directory (os error 21)". The one way every error reaches the terminal.
pub fn sentence(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let words = cause.to_string();
        if text.is_empty() {
            text = words;
        } else if !words.is_empty() && !text.contains(&words) {
            text.push_str(": ");
            text.push_str(&words);
        }
    }
    text
}

/// The exit code for a command's error, after saying it on stderr (except a closed stdout,
/// which ends the output quietly).
pub fn exit_code(err: &anyhow::Error) -> ExitCode {
    if err.chain().any(|e| e.is::<StdoutClosed>()) {
        return ExitCode::SUCCESS;
    }
    if let Some(i) = err.chain().find_map(|e| e.downcast_ref::<Interrupted>()) {
        info(i);
        return ExitCode::from(u8::try_from(128 + i.signal).unwrap_or(130));
    }
    error(sentence(err));
    if let Some(c) = err.chain().find_map(|e| e.downcast_ref::<CodedError>()) {
        return ExitCode::from(c.code);
    }
    if err.chain().any(|e| e.is::<UsageError>()) {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_lines_are_redrawn_in_place_and_escaped() {
        let (text, n) = redrawn(0, ["T: 0 ( 12) P:99", "T: 1 ( 13) P:99"]);
        assert_eq!(n, 2);
        assert_eq!(text, "T: 0 ( 12) P:99\x1b[K\nT: 1 ( 13) P:99\x1b[K\n");
        // Back up over the two drawn; a control character in a line is shown, not obeyed.
        let (text, n) = redrawn(2, ["bad\x1b[2Jline"]);
        assert_eq!(n, 1);
        assert!(text.starts_with("\x1b[2A"), "{text:?}");
        assert!(!text.contains("\x1b[2J"), "{text:?}");
    }

    /// "No such file or directory (os error 2): No such file or directory
    /// (os error 2)" from an error whose message includes its source.
    #[test]
    fn a_cause_the_message_already_says_is_not_repeated() {
        // As thiserror's `#[error("cannot read {path}: {source}")]` with a `source` field.
        #[derive(Debug)]
        struct ReadError {
            path: String,
            source: std::io::Error,
        }
        impl fmt::Display for ReadError {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "cannot read {}: {}", self.path, self.source)
            }
        }
        impl std::error::Error for ReadError {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.source)
            }
        }
        let e = anyhow::Error::new(ReadError {
            path: "/tmp".into(),
            source: std::io::Error::from_raw_os_error(libc::EISDIR),
        });
        assert_eq!(
            format!("{e:#}"),
            "cannot read /tmp: Is a directory (os error 21): Is a directory (os error 21)"
        );
        assert_eq!(
            sentence(&e),
            "cannot read /tmp: Is a directory (os error 21)"
        );
        // A context whose cause says something new keeps it.
        let e = anyhow::anyhow!("disk failed").context("bench disk");
        assert_eq!(sentence(&e), "bench disk: disk failed");
    }

    #[test]
    fn errors_map_to_exit_codes_through_contexts() {
        let code = |e: anyhow::Error| format!("{:?}", exit_code(&e));
        assert_eq!(
            code(usage("bad").context("bench latency")),
            code(usage("x"))
        );
        assert_eq!(code(usage("x")), format!("{:?}", ExitCode::from(2)));
        assert_eq!(
            code(anyhow::Error::new(StdoutClosed).context("printing")),
            format!("{:?}", ExitCode::SUCCESS)
        );
        let i = Interrupted {
            signal: libc::SIGTERM,
            kept: String::new(),
        };
        assert_eq!(i.to_string(), "interrupted by SIGTERM");
        assert_eq!(code(i.into()), format!("{:?}", ExitCode::from(143)));
        assert_eq!(
            code(anyhow::anyhow!("disk failed")),
            format!("{:?}", ExitCode::from(1))
        );
    }
}
