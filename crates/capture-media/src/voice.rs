//! Voice-overs spoken by `espeak-ng`.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::error::{MediaError, Result};
use crate::process::{Stdout, run};

/// A voice an ad can be spoken in. The id is an `espeak-ng -v` argument: a language
/// voice, optionally with `+variant` (the `f3` variant is espeak-ng's clearest female one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Voice {
    /// The id clients send (`en-us`, `en-us+f3`, …).
    pub id: &'static str,
    /// A name to show.
    pub name: &'static str,
    /// BCP 47 language tag.
    pub language: &'static str,
    /// `male` or `female` as the voice sounds.
    pub gender: Option<&'static str>,
    /// Words per minute the voice is spoken at by default (tuned for ads: a little
    /// slower and more even than espeak-ng's 175).
    #[serde(skip)]
    pub(crate) wpm: u32,
    /// espeak-ng pitch, 0–99 (50 is its default).
    #[serde(skip)]
    pub(crate) pitch: u32,
}

const fn v(
    id: &'static str,
    name: &'static str,
    language: &'static str,
    gender: &'static str,
    wpm: u32,
    pitch: u32,
) -> Voice {
    Voice { id, name, language, gender: Some(gender), wpm, pitch }
}

/// The curated voices. Each is a language voice shipped in Debian's `espeak-ng-data`
/// (listed by `espeak-ng --voices`), plain (male) or with the `f3` variant (listed by
/// `espeak-ng --voices=variant`); a test checks every one exists on the machine.
/// MBROLA voices are left out: they need packages Debian does not install with espeak-ng.
const VOICES: &[Voice] = &[
    v("en-us", "English (US), male", "en-US", "male", 165, 45),
    v("en-us+f3", "English (US), female", "en-US", "female", 165, 50),
    v("en-gb", "English (UK), male", "en-GB", "male", 165, 45),
    v("en-gb+f3", "English (UK), female", "en-GB", "female", 165, 50),
    v("de", "German, male", "de-DE", "male", 160, 45),
    v("de+f3", "German, female", "de-DE", "female", 160, 50),
    v("fr-fr", "French, male", "fr-FR", "male", 165, 45),
    v("fr-fr+f3", "French, female", "fr-FR", "female", 165, 50),
    v("es", "Spanish (Spain), male", "es-ES", "male", 165, 45),
    v("es+f3", "Spanish (Spain), female", "es-ES", "female", 165, 50),
    v("es-419", "Spanish (Latin America), male", "es-419", "male", 165, 45),
    v("it", "Italian, male", "it-IT", "male", 160, 45),
    v("it+f3", "Italian, female", "it-IT", "female", 160, 50),
    v("pt-br", "Portuguese (Brazil), male", "pt-BR", "male", 160, 45),
    v("pt-br+f3", "Portuguese (Brazil), female", "pt-BR", "female", 160, 50),
    v("nl", "Dutch, male", "nl-NL", "male", 160, 45),
];

/// The voices an ad may use.
pub fn voices() -> Vec<Voice> {
    VOICES.to_vec()
}

/// Looks a voice up by id; an unknown id is an error listing the allowed ones.
pub fn find_voice(id: &str) -> Result<Voice> {
    VOICES.iter().find(|v| v.id == id).cloned().ok_or_else(|| MediaError::UnknownVoice {
        id: id.chars().take(64).collect(),
        allowed: VOICES.iter().map(|v| v.id.to_string()).collect(),
    })
}

/// Speaks `script` into a WAV file at `speed` × the voice's usual rate.
pub(crate) async fn speak(voice: &Voice, script_file: &Path, speed: f64, out: &Path, limit: Duration) -> Result<()> {
    let wpm = ((f64::from(voice.wpm) * speed).round() as u32).clamp(80, 450);
    run(
        "espeak-ng",
        [
            "-v".into(),
            voice.id.into(),
            "-s".into(),
            wpm.to_string().into(),
            "-p".into(),
            voice.pitch.to_string().into(),
            // A short pause between words keeps a synthetic voice intelligible over music.
            "-g".into(),
            "2".into(),
            "-w".into(),
            out.as_os_str().to_owned(),
            // The script comes from a file so no text can be read as an option.
            "-f".into(),
            script_file.as_os_str().to_owned(),
        ] as [std::ffi::OsString; 12],
        limit,
        Stdout::Collect,
    )
    .await?;
    Ok(())
}

/// Which of `ids` `espeak-ng` on this machine cannot speak (asks `espeak-ng --voices`).
pub async fn missing_voices(ids: &[&str]) -> Result<Vec<String>> {
    let limit = Duration::from_secs(20);
    let langs = run("espeak-ng", ["--voices"], limit, Stdout::Collect).await?;
    let variants = run("espeak-ng", ["--voices=variant"], limit, Stdout::Collect).await?;
    let langs = String::from_utf8_lossy(&langs.stdout).to_string();
    let variants = String::from_utf8_lossy(&variants.stdout).to_string();
    // Columns: Pty Language Age/Gender VoiceName File Other-languages.
    let lang_ids: Vec<String> =
        langs.lines().skip(1).filter_map(|l| l.split_whitespace().nth(1).map(str::to_lowercase)).collect();
    let variant_files: Vec<String> = variants
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter_map(|f| f.strip_prefix("!v/").map(str::to_string))
        .collect();
    Ok(ids
        .iter()
        .filter(|id| {
            let (lang, variant) = match id.split_once('+') {
                Some((l, v)) => (l, Some(v)),
                None => (**id, None),
            };
            let lang_ok = lang_ids.iter().any(|l| l == &lang.to_lowercase());
            let variant_ok = variant.is_none_or(|v| variant_files.iter().any(|f| f == v));
            !(lang_ok && variant_ok)
        })
        .map(|s| s.to_string())
        .collect())
}
