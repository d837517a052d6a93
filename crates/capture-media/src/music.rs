//! Background music synthesised by the service itself: no downloaded tracks.
//!
//! Each track is a chord progression played by a small deterministic synthesiser written
//! here (plucked strings by Karplus–Strong, a band-limited saw pad, FM-free electric keys,
//! a sine bass and synthetic drums), rendered as PCM in Rust. The same id and length
//! always give the same samples.

use std::f32::consts::TAU;
use std::path::Path;

use serde::Serialize;

use crate::error::{MediaError, Result};

/// A music track an ad can use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Track {
    /// The id clients send.
    pub id: &'static str,
    /// A name to show.
    pub name: &'static str,
    /// What it feels like.
    pub mood: &'static str,
    /// Tempo in beats per minute (0 for silence).
    pub bpm: u32,
}

const TRACKS: &[Track] = &[
    Track { id: "upbeat", name: "Upbeat pop", mood: "energetic, bright", bpm: 118 },
    Track { id: "calm", name: "Calm morning", mood: "gentle, warm", bpm: 80 },
    Track { id: "corporate", name: "Corporate keys", mood: "confident, clean", bpm: 104 },
    Track { id: "none", name: "No music", mood: "voice only", bpm: 0 },
];

/// The music an ad may use.
pub fn music() -> Vec<Track> {
    TRACKS.to_vec()
}

/// Looks a track up by id; an unknown id is an error listing the allowed ones.
pub fn find_track(id: &str) -> Result<Track> {
    TRACKS.iter().find(|t| t.id == id).cloned().ok_or_else(|| MediaError::UnknownMusic {
        id: id.chars().take(64).collect(),
        allowed: TRACKS.iter().map(|t| t.id.to_string()).collect(),
    })
}

/// Sample rate of the synthesised music.
pub const MUSIC_RATE: u32 = 44_100;

/// Stereo PCM, interleaved left/right, in −1..1.
pub struct Pcm {
    /// Interleaved samples.
    pub samples: Vec<f32>,
    /// Samples per second per channel.
    pub rate: u32,
}

/// Synthesises `seconds` of track `id` (fading in briefly and out over the last 1.5 s),
/// mastered to about −20 dBFS RMS with peaks below −1 dBFS.
pub fn synthesize(id: &str, seconds: f64) -> Result<Pcm> {
    let track = find_track(id)?;
    if !(0.0..=600.0).contains(&seconds) {
        return Err(MediaError::Invalid(format!("music length {seconds}s is out of range")));
    }
    let rate = MUSIC_RATE;
    let n = (seconds * f64::from(rate)).round() as usize;
    let mut s = Synth::new(n, rate);
    match track.id {
        "upbeat" => upbeat(&mut s, seconds as f32),
        "calm" => calm(&mut s, seconds as f32),
        "corporate" => corporate(&mut s, seconds as f32),
        _ => {}
    }
    Ok(Pcm { samples: s.master(seconds as f32), rate })
}

/// Writes 16-bit PCM WAV.
pub fn write_wav(path: &Path, pcm: &Pcm, channels: u16) -> Result<()> {
    let data_len = (pcm.samples.len() * 2) as u32;
    let mut b = Vec::with_capacity(44 + data_len as usize);
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data_len).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&channels.to_le_bytes());
    b.extend_from_slice(&pcm.rate.to_le_bytes());
    b.extend_from_slice(&(pcm.rate * u32::from(channels) * 2).to_le_bytes());
    b.extend_from_slice(&(channels * 2).to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&data_len.to_le_bytes());
    for x in &pcm.samples {
        let v = (x.clamp(-1.0, 1.0) * 32767.0).round() as i16;
        b.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, b).map_err(|e| MediaError::io(format!("writing {}", path.display()), e))
}

fn midi_hz(m: f32) -> f32 {
    440.0 * 2f32.powf((m - 69.0) / 12.0)
}

/// A chord: root as a MIDI note and the intervals above it.
#[derive(Clone, Copy)]
struct Chord {
    root: i32,
    tones: [i32; 4],
}

const fn ch(root: i32, tones: [i32; 4]) -> Chord {
    Chord { root, tones }
}

const MAJ: [i32; 4] = [0, 4, 7, 12];
const MIN: [i32; 4] = [0, 3, 7, 12];
const MAJ7: [i32; 4] = [0, 4, 7, 11];
const MIN7: [i32; 4] = [0, 3, 7, 10];
const ADD9: [i32; 4] = [0, 4, 7, 14];

/// Deterministic noise (xorshift32).
struct Noise(u32);
impl Noise {
    fn next(&mut self) -> f32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        (x as f32 / u32::MAX as f32) * 2.0 - 1.0
    }
}

/// Two buses (dry: drums and bass; wet: melodic parts, which get a stereo echo) of
/// interleaved stereo samples.
struct Synth {
    rate: f32,
    dry: Vec<f32>,
    wet: Vec<f32>,
    noise: Noise,
}

#[derive(Clone, Copy)]
enum Bus {
    Dry,
    Wet,
}

impl Synth {
    fn new(frames: usize, rate: u32) -> Self {
        Synth { rate: rate as f32, dry: vec![0.0; frames * 2], wet: vec![0.0; frames * 2], noise: Noise(0x9E37_79B9) }
    }

    fn frames(&self) -> usize {
        self.dry.len() / 2
    }

    /// Adds a mono signal `f(t_since_start)` from `start` for `len` seconds, panned
    /// (−1 left … 1 right).
    fn add(&mut self, bus: Bus, start: f32, len: f32, pan: f32, mut f: impl FnMut(f32) -> f32) {
        let i0 = (start * self.rate).max(0.0) as usize;
        let n = (len * self.rate) as usize;
        let (gl, gr) = ((1.0 - pan).sqrt() * 0.707, (1.0 + pan).sqrt() * 0.707);
        let frames = self.frames();
        let buf = match bus {
            Bus::Dry => &mut self.dry,
            Bus::Wet => &mut self.wet,
        };
        for k in 0..n {
            let i = i0 + k;
            if i >= frames {
                break;
            }
            let x = f(k as f32 / self.rate);
            buf[2 * i] += x * gl;
            buf[2 * i + 1] += x * gr;
        }
    }

    fn kick(&mut self, t: f32, gain: f32) {
        let mut phase = 0.0f32;
        let rate = self.rate;
        self.add(Bus::Dry, t, 0.45, 0.0, |s| {
            let f = 45.0 + 95.0 * (-s / 0.035).exp();
            phase += TAU * f / rate;
            let click = if s < 0.004 { 0.3 * (1.0 - s / 0.004) } else { 0.0 };
            gain * ((phase.sin() * (-s / 0.16).exp()) + click)
        });
    }

    fn snare(&mut self, t: f32, gain: f32) {
        let mut lp = 0.0f32;
        let mut noise = Noise(self.noise.0 ^ (t * 1000.0) as u32 | 1);
        self.add(Bus::Dry, t, 0.25, 0.1, |s| {
            let n = noise.next();
            lp += 0.35 * (n - lp);
            let hp = n - lp;
            let tone = (TAU * 185.0 * s).sin() * (-s / 0.05).exp();
            gain * (0.8 * hp * (-s / 0.07).exp() + 0.5 * tone)
        });
    }

    fn clap(&mut self, t: f32, gain: f32) {
        let mut lp = 0.0f32;
        let mut noise = Noise(self.noise.0 ^ (t * 777.0) as u32 | 1);
        self.add(Bus::Dry, t, 0.2, -0.1, |s| {
            let n = noise.next();
            lp += 0.5 * (n - lp);
            // Three quick bursts then a tail: a hand clap's shape.
            let env = if s < 0.03 { (-(s % 0.01) / 0.003).exp() } else { (-(s - 0.03) / 0.06).exp() };
            gain * (n - lp) * env
        });
    }

    fn hat(&mut self, t: f32, gain: f32, open: bool) {
        let decay = if open { 0.12 } else { 0.03 };
        let mut lp = 0.0f32;
        let mut noise = Noise(self.noise.0 ^ (t * 3111.0) as u32 | 1);
        self.add(Bus::Dry, t, decay * 5.0, 0.35, |s| {
            let n = noise.next();
            lp += 0.6 * (n - lp);
            gain * (n - lp) * (-s / decay).exp()
        });
    }

    fn bass(&mut self, t: f32, len: f32, midi: i32, gain: f32) {
        let f = midi_hz(midi as f32);
        let rel = 0.06;
        self.add(Bus::Dry, t, len + rel, 0.0, |s| {
            let env = (s / 0.005).min(1.0)
                * (0.75 + 0.25 * (-s / 0.15).exp())
                * if s > len { (-(s - len) / 0.02).exp() } else { 1.0 };
            let ph = f * s;
            let tri = 4.0 * (ph - (ph + 0.5).floor()).abs() - 1.0;
            let x = (TAU * ph).sin() + 0.25 * tri;
            gain * (1.3 * x).tanh() * env
        });
    }

    /// Karplus–Strong plucked string.
    fn pluck(&mut self, t: f32, len: f32, midi: i32, gain: f32, pan: f32, bright: f32) {
        let f = midi_hz(midi as f32);
        let period = (self.rate / f).max(2.0) as usize;
        let mut noise = Noise(self.noise.0 ^ ((t * 1000.0) as u32).wrapping_mul(31) ^ midi as u32 | 1);
        let mut line: Vec<f32> = (0..period).map(|_| noise.next()).collect();
        // Soften the excitation: fewer harsh highs for a rounder pluck.
        for _ in 0..2 {
            for i in 1..period {
                line[i] = bright * line[i] + (1.0 - bright) * line[i - 1];
            }
        }
        let mut i = 0usize;
        let total = len + 0.4;
        self.add(Bus::Wet, t, total, pan, |s| {
            let a = line[i % period];
            let b = line[(i + 1) % period];
            let y = 0.996 * 0.5 * (a + b);
            line[i % period] = y;
            i += 1;
            let damp = if s > len { (-(s - len) / 0.08).exp() } else { 1.0 };
            gain * a * damp
        });
    }

    /// Electric-piano-like keys: a few decaying sine partials.
    fn keys(&mut self, t: f32, len: f32, midi: i32, gain: f32, pan: f32) {
        let f = midi_hz(midi as f32);
        self.add(Bus::Wet, t, len + 0.3, pan, |s| {
            let rel = if s > len { (-(s - len) / 0.07).exp() } else { 1.0 };
            let att = (s / 0.004).min(1.0);
            let x = (TAU * f * s).sin() * (-s / 0.9).exp()
                + 0.45 * (TAU * 2.0 * f * s).sin() * (-s / 0.35).exp()
                + 0.15 * (TAU * 3.0 * f * s).sin() * (-s / 0.2).exp()
                + 0.08 * (TAU * 7.0 * f * s).sin() * (-s / 0.03).exp();
            gain * x * att * rel
        });
    }

    /// Marimba/bell: inharmonic partials that die away quickly.
    fn bell(&mut self, t: f32, midi: i32, gain: f32, pan: f32) {
        let f = midi_hz(midi as f32);
        self.add(Bus::Wet, t, 1.6, pan, |s| {
            let att = (s / 0.002).min(1.0);
            let x = (TAU * f * s).sin() * (-s / 0.5).exp()
                + 0.3 * (TAU * 3.93 * f * s).sin() * (-s / 0.12).exp()
                + 0.1 * (TAU * 9.1 * f * s).sin() * (-s / 0.04).exp();
            gain * x * att
        });
    }

    /// A soft pad: two detuned band-limited saws through a one-pole low-pass.
    fn pad(&mut self, t: f32, len: f32, midi: i32, gain: f32, cutoff: f32) {
        let f = midi_hz(midi as f32);
        let rate = self.rate;
        let a = 1.0 - (-TAU * cutoff / rate).exp();
        for (detune, pan) in [(0.997f32, -0.5f32), (1.003, 0.5)] {
            let fd = f * detune;
            let dt = fd / rate;
            let mut ph = (midi as f32 * 0.13) % 1.0;
            let mut lp = 0.0f32;
            self.add(Bus::Wet, t, len + 0.6, pan, |s| {
                ph += dt;
                if ph >= 1.0 {
                    ph -= 1.0;
                }
                let mut saw = 2.0 * ph - 1.0;
                saw -= poly_blep(ph, dt);
                lp += a * (saw - lp);
                let env = (s / 0.35).min(1.0) * if s > len { (-(s - len) / 0.25).exp() } else { 1.0 };
                gain * lp * env
            });
        }
    }

    /// Mixes the buses (with a stereo echo on the wet one), normalises and fades.
    fn master(mut self, seconds: f32) -> Vec<f32> {
        let frames = self.frames();
        if frames == 0 {
            return Vec::new();
        }
        // Ping-pong echo: 3/16 of a second, crossed channels.
        let d = (0.1875 * self.rate) as usize;
        let mut out = self.dry;
        for i in 0..frames {
            let (l, r) = (self.wet[2 * i], self.wet[2 * i + 1]);
            if i >= d {
                let (el, er) = (self.wet[2 * (i - d) + 1], self.wet[2 * (i - d)]);
                self.wet[2 * i] = l + 0.28 * el;
                self.wet[2 * i + 1] = r + 0.28 * er;
            }
            out[2 * i] += self.wet[2 * i];
            out[2 * i + 1] += self.wet[2 * i + 1];
        }
        let sum2: f64 = out.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
        let rms = (sum2 / out.len() as f64).sqrt() as f32;
        if rms > 1e-6 {
            let target = 0.1; // −20 dBFS
            let g = target / rms;
            let fade_in = 0.05 * self.rate;
            let fade_out = 1.5f32.min(seconds / 2.0) * self.rate;
            for i in 0..frames {
                let fi = (i as f32 / fade_in).min(1.0);
                let fo = ((frames - i) as f32 / fade_out).min(1.0);
                let env = fi * fo * fo;
                for c in 0..2 {
                    // Soft limiter: linear below 0.5, gently bent up to 0.89 (−1 dBFS).
                    let x = out[2 * i + c] * g;
                    let y =
                        if x.abs() <= 0.5 { x } else { x.signum() * (0.5 + 0.39 * ((x.abs() - 0.5) / 0.39).tanh()) };
                    out[2 * i + c] = y * env;
                }
            }
        }
        out
    }
}

fn poly_blep(t: f32, dt: f32) -> f32 {
    if t < dt {
        let x = t / dt;
        x + x - x * x - 1.0
    } else if t > 1.0 - dt {
        let x = (t - 1.0) / dt;
        x * x + x + x + 1.0
    } else {
        0.0
    }
}

/// Calls `f(bar_index, bar_start, step_seconds)` for every bar that starts before `seconds`.
fn bars(bpm: f32, seconds: f32, mut f: impl FnMut(usize, f32, f32)) {
    let step = 60.0 / bpm / 4.0;
    let bar = step * 16.0;
    let mut b = 0;
    while (b as f32) * bar < seconds {
        f(b, b as f32 * bar, step);
        b += 1;
    }
}

fn upbeat(s: &mut Synth, seconds: f32) {
    // C – G – Am – F, the pop progression.
    let prog = [ch(60, ADD9), ch(55, MAJ), ch(57, MIN), ch(53, MAJ7)];
    bars(118.0, seconds, |b, t0, st| {
        let c = prog[b % prog.len()];
        let intro = b == 0;
        for k in 0..16 {
            let t = t0 + k as f32 * st;
            if !intro {
                if k % 4 == 0 {
                    s.kick(t, 0.9);
                }
                if k == 4 || k == 12 {
                    s.clap(t, 0.5);
                    s.snare(t, 0.35);
                }
                if k % 2 == 0 {
                    s.hat(t, 0.16, false);
                } else if k % 4 == 2 {
                    s.hat(t, 0.12, true);
                }
                if k % 2 == 0 {
                    let oct = if k == 6 || k == 14 { 12 } else { 0 };
                    s.bass(t, st * 1.6, c.root - 24 + oct, 0.45);
                }
            }
            // Sixteenth-note arpeggio up and down the chord.
            let pat = [0, 1, 2, 3, 2, 1, 2, 3];
            s.pluck(t, st * 1.8, c.root + 12 + c.tones[pat[k % 8]], 0.32, if k % 2 == 0 { -0.35 } else { 0.35 }, 0.55);
        }
        for tone in &c.tones[..3] {
            s.pad(t0, st * 16.0, c.root + tone, 0.05, 1400.0);
        }
    });
}

fn calm(s: &mut Synth, seconds: f32) {
    // Dmaj7 – Bm7 – Gmaj7 – A, slow and open.
    let prog = [ch(62, MAJ7), ch(59, MIN7), ch(55, MAJ7), ch(57, ADD9)];
    bars(80.0, seconds, |b, t0, st| {
        let c = prog[b % prog.len()];
        s.bass(t0, st * 7.5, c.root - 24, 0.4);
        s.bass(t0 + st * 8.0, st * 7.5, c.root - 24 + 7, 0.3);
        for tone in &c.tones {
            s.pad(t0, st * 16.0, c.root + tone, 0.06, 900.0);
        }
        let melody = [3, 2, 1, 2, 0, 1, 2, 3];
        for k in 0..8 {
            let t = t0 + k as f32 * st * 2.0;
            s.bell(t, c.root + 12 + c.tones[melody[(k + b) % 8]], 0.22, if k % 2 == 0 { -0.4 } else { 0.4 });
            if b > 0 {
                s.hat(t, 0.05, false);
            }
        }
        if b > 0 {
            s.kick(t0, 0.5);
            s.kick(t0 + st * 10.0, 0.35);
        }
    });
}

fn corporate(s: &mut Synth, seconds: f32) {
    // G – Em – C – D.
    let prog = [ch(55, MAJ), ch(52, MIN), ch(48, ADD9), ch(50, MAJ)];
    bars(104.0, seconds, |b, t0, st| {
        let c = prog[b % prog.len()];
        for k in 0..16 {
            let t = t0 + k as f32 * st;
            if b > 0 {
                if k == 0 || k == 8 || k == 10 {
                    s.kick(t, 0.8);
                }
                if k == 4 || k == 12 {
                    s.clap(t, 0.45);
                }
                if k % 2 == 0 {
                    s.hat(t, 0.11, k % 4 == 2);
                }
            }
            if k % 4 == 0 {
                s.bass(t, st * 3.5, c.root - 12 + if k == 12 { 7 } else { 0 }, 0.42);
            }
            // Syncopated chord stabs.
            if [0, 3, 6, 10, 12].contains(&k) {
                for tone in &c.tones[..3] {
                    s.keys(t, st * 1.5, c.root + 12 + tone, 0.13, if *tone == 0 { -0.2 } else { 0.2 });
                }
            }
        }
        s.pad(t0, st * 16.0, c.root, 0.04, 1000.0);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rms(x: &[f32]) -> f32 {
        (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt()
    }

    #[test]
    fn tracks_are_deterministic_mastered_and_not_a_test_tone() {
        for t in music() {
            let a = synthesize(t.id, 6.0).unwrap();
            assert_eq!(a.samples.len(), 6 * 44_100 * 2);
            let peak = a.samples.iter().fold(0f32, |m, x| m.max(x.abs()));
            assert!(peak <= 0.9, "{}: peak {peak}", t.id);
            if t.id == "none" {
                assert_eq!(peak, 0.0);
                continue;
            }
            let b = synthesize(t.id, 6.0).unwrap();
            assert!(a.samples == b.samples, "{} is not deterministic", t.id);
            // Level: about −20 dBFS overall.
            let r = rms(&a.samples);
            assert!((0.05..0.15).contains(&r), "{}: rms {r}", t.id);
            // Music moves: the level over quarter-second windows varies (beats, notes),
            // unlike a steady tone.
            let win = 44_100 / 4 * 2;
            let levels: Vec<f32> = a.samples[..5 * 44_100 * 2].chunks(win).map(rms).collect();
            let max = levels.iter().cloned().fold(0.0, f32::max);
            let min = levels.iter().cloned().fold(f32::MAX, f32::min);
            assert!(max / min.max(1e-6) > 1.2, "{}: levels {levels:?}", t.id);
            // Stereo: the channels differ.
            let diff: f32 = a.samples.chunks(2).map(|p| (p[0] - p[1]).abs()).sum();
            assert!(diff > 100.0, "{}: mono", t.id);
        }
    }

    #[test]
    fn unknown_music_names_the_allowed_ids() {
        let e = find_track("disco").unwrap_err().to_string();
        assert!(e.contains("upbeat") && e.contains("calm") && e.contains("none"), "{e}");
    }
}
