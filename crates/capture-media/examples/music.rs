//! Writes a synthesised track to a WAV file to listen to:
//! `cargo run -p capture-media --example music -- upbeat 20 /tmp/upbeat.wav`

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: music <id> <seconds> <out.wav>");
        std::process::exit(2);
    }
    let seconds: f64 = args[2].parse().expect("seconds");
    match capture_media::music::synthesize(&args[1], seconds) {
        Ok(pcm) => capture_media::music::write_wav(std::path::Path::new(&args[3]), &pcm, 2).expect("write"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
