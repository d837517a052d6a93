//! How long each step of a capture took: the debug log line `capture phases` and the spans of
//! a traced job (the server records them with these times; the steps themselves stay free of
//! tracing).

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// One step of a capture, as offsets from [`Phases::started`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    /// `page`, `setup`, `navigate`, `wall`, `consent`, `wait`, `blocking`, `overlays`, `frames`,
    /// `shot`, `metadata`, `encode` or `content`.
    pub name: &'static str,
    pub start: Duration,
    pub end: Duration,
}

/// The steps of one capture, in the order they ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phases {
    /// When the capture began (it asked the pool for a page), on the system clock.
    pub started: SystemTime,
    pub steps: Vec<Phase>,
}

impl Phases {
    /// The system time `offset` after the capture began.
    pub fn at(&self, offset: Duration) -> SystemTime {
        self.started + offset
    }
}

/// Records [`Phases`] as a capture goes.
pub(crate) struct PhaseClock {
    t0: Instant,
    started: SystemTime,
    /// Where the next step begins: the end of the last one.
    last: Duration,
    steps: Vec<Phase>,
}

impl PhaseClock {
    pub(crate) fn start() -> PhaseClock {
        PhaseClock {
            t0: Instant::now(),
            started: SystemTime::now(),
            last: Duration::ZERO,
            steps: Vec::with_capacity(16),
        }
    }

    /// Time since the capture began.
    pub(crate) fn now(&self) -> Duration {
        self.t0.elapsed()
    }

    /// The step `name` ends now; it began where the last one ended.
    pub(crate) fn step(&mut self, name: &'static str) {
        self.push(name, self.last, self.now());
    }

    /// The step `name` began at `start` (it may overlap the steps since) and ends now.
    pub(crate) fn since(&mut self, name: &'static str, start: Duration) {
        self.push(name, start, self.now());
    }

    fn push(&mut self, name: &'static str, start: Duration, end: Duration) {
        self.steps.push(Phase { name, start, end });
        self.last = end;
    }

    pub(crate) fn finish(self) -> Phases {
        Phases { started: self.started, steps: self.steps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_follow_each_other_and_an_overlapping_one_keeps_its_own_start() {
        let ms = Duration::from_millis;
        let mut c = PhaseClock::start();
        c.push("page", c.last, ms(10));
        c.push("navigate", c.last, ms(40));
        c.push("metadata", c.last, ms(45));
        c.push("encode", ms(40), ms(65));
        c.push("content", c.last, ms(66));
        let p = c.finish();
        let got: Vec<(&str, u128, u128)> =
            p.steps.iter().map(|s| (s.name, s.start.as_millis(), s.end.as_millis())).collect();
        assert_eq!(
            got,
            [("page", 0, 10), ("navigate", 10, 40), ("metadata", 40, 45), ("encode", 40, 65), ("content", 65, 66)]
        );
        assert_eq!(p.at(ms(40)), p.started + ms(40));
        // The real clock moves on.
        let mut c = PhaseClock::start();
        c.step("page");
        c.since("encode", Duration::ZERO);
        assert!(c.steps[0].end <= c.steps[1].end && c.steps[1].start == Duration::ZERO);
    }
}
