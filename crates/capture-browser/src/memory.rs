//! How much memory a browser's process tree uses, read from `/proc` (Linux).
//!
//! Chromium is a tree: the browser process, a zygote, renderers, a GPU/network/storage
//! utility... Summing RSS over it counts the pages they share (the binary, fonts, shared
//! memory) once per process, several times too much. PSS (`/proc/PID/smaps_rollup`) splits
//! each shared page between the processes that map it, so the sum over the tree is what
//! the tree really holds. Where PSS cannot be read (another user's process without
//! ptrace rights), RSS (`/proc/PID/status`) stands in.

use std::collections::HashSet;

/// The root and every descendant of `root`, found through each thread's `children` list
/// (a process started by any of a parent's threads is listed under that thread).
fn tree(root: u32) -> Vec<u32> {
    let mut seen = HashSet::from([root]);
    let mut order = vec![root];
    let mut i = 0;
    while i < order.len() {
        let pid = order[i];
        i += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for task in tasks.flatten() {
            let Ok(list) = std::fs::read_to_string(task.path().join("children")) else { continue };
            for child in list.split_whitespace().filter_map(|p| p.parse::<u32>().ok()) {
                if seen.insert(child) {
                    order.push(child);
                }
            }
        }
    }
    order
}

/// The `kB` value of `field` in a `/proc` file like `status` or `smaps_rollup`.
fn kb_field(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    line[field.len() + 1..].split_whitespace().next()?.parse().ok()
}

/// Bytes one process holds: its PSS, else its RSS; None when it is gone.
fn process_bytes(pid: u32) -> Option<u64> {
    if let Ok(rollup) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        && let Some(kb) = kb_field(&rollup, "Pss")
    {
        return Some(kb * 1024);
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    // Kernel threads and zombies have no VmRSS: they hold no user memory.
    Some(kb_field(&status, "VmRSS").unwrap_or(0) * 1024)
}

/// Bytes the process tree rooted at `root` holds (blocking: reads `/proc`); None when the
/// root itself is gone. Processes that exit while being read are skipped.
pub(crate) fn tree_bytes(root: u32) -> Option<u64> {
    let first = process_bytes(root)?;
    Some(first + tree(root).into_iter().skip(1).filter_map(process_bytes).sum::<u64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_in_kilobytes() {
        let status = "Name:\tchrome\nVmPeak:\t  900 kB\nVmRSS:\t  123456 kB\nRssAnon:\t 1 kB\n";
        assert_eq!(kb_field(status, "VmRSS"), Some(123_456));
        assert_eq!(kb_field(status, "Vm"), None, "a prefix of another field is not that field");
        let rollup = "55d0-7ffd ---p 00000000 00:00 0 [rollup]\nRss:  2000 kB\nPss:  750 kB\nPss_Anon: 500 kB\n";
        assert_eq!(kb_field(rollup, "Pss"), Some(750));
    }

    #[test]
    fn the_tree_reaches_grandchildren_also_inside_a_pid_namespace() {
        let script = "sleep 30 & sleep 30 & wait";
        let namespaced = std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--kill-child", "true"])
            .status()
            .is_ok_and(|s| s.success());
        let mut cmd = if namespaced {
            let mut c = std::process::Command::new("unshare");
            c.args(["--pid", "--fork", "--kill-child", "sh", "-c", script]);
            c
        } else {
            let mut c = std::process::Command::new("sh");
            c.args(["-c", script]);
            c
        };
        let mut child = cmd.spawn().expect("spawn");
        let root = child.id();
        // unshare → sh → 2 × sleep, or sh → 2 × sleep.
        let want = if namespaced { 4 } else { 3 };
        let t = std::time::Instant::now();
        let mut found = tree(root);
        while found.len() < want && t.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(20));
            found = tree(root);
        }
        // Descendants first, so none is left to be re-parented.
        for pid in found.iter().rev() {
            let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        let _ = child.wait();
        assert_eq!(found.len(), want, "namespaced: {namespaced}, tree: {found:?}");
        assert_eq!(found[0], root);
    }

    #[test]
    fn our_own_tree_has_memory() {
        let me = std::process::id();
        assert!(tree(me).contains(&me));
        let bytes = tree_bytes(me).expect("this process exists");
        assert!(bytes > 1 << 20, "{bytes} bytes");
        assert_eq!(tree_bytes(u32::MAX - 1), None);
    }
}
