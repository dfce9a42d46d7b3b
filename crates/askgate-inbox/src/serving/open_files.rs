//! The open files a listener's connections need. Each connection is a
//! file; Linux starts most processes with a soft limit of 1,024 open files
//! (and a hard limit far above it), which a few hundred clients — each
//! holding a stream and a request or two — go past. So, as Go's runtime
//! does, the soft limit is raised to the hard one (at most [`MOST`]) before
//! a listener serves, and a listener whose connection cap still would not
//! fit is given a lower cap, and the log says so.

/// The open files kept for everything but connections: the store, the
/// upstreams' pipes, the log, the other listener.
pub const KEPT_BACK: usize = 256;

/// The highest soft limit asked for.
pub const MOST: u64 = 1 << 20;

/// Raise the process's soft limit of open files to its hard one (at most
/// [`MOST`]): the limit then in force, if it is known.
#[cfg(unix)]
pub fn raise() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let Some(current) = limit.current else {
        // Unlimited.
        return None;
    };
    let wanted = limit.maximum.map_or(MOST, |maximum| maximum.min(MOST));
    if wanted <= current {
        return Some(current);
    }
    let raised = Rlimit {
        current: Some(wanted),
        maximum: limit.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => Some(wanted),
        Err(error) => {
            tracing::debug!(%error, current, wanted, "the open-files limit could not be raised");
            Some(current)
        }
    }
}

/// Where there is no such limit to raise: none known.
#[cfg(not(unix))]
pub fn raise() -> Option<u64> {
    None
}

/// The connections a listener may serve at once: `wanted`, but within an
/// open-files limit of `limit` (none: unknown or unlimited, `wanted`
/// stands).
pub fn within(wanted: usize, limit: Option<u64>) -> usize {
    let Some(limit) = limit else {
        return wanted;
    };
    let room = usize::try_from(limit)
        .unwrap_or(usize::MAX)
        .saturating_sub(KEPT_BACK)
        .max(1);
    wanted.min(room)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_past_the_open_files_limit_is_lowered_to_fit_and_one_within_it_stands() {
        assert_eq!(within(4096, Some(1024)), 1024 - KEPT_BACK);
        assert_eq!(within(4096, Some(1 << 20)), 4096);
        assert_eq!(within(4096, None), 4096);
        assert_eq!(within(4096, Some(10)), 1);
    }

    #[cfg(unix)]
    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        use rustix::process::{Resource, getrlimit};
        let raised = raise();
        let now = getrlimit(Resource::Nofile);
        assert_eq!(now.current, raised, "what is said is what is in force");
        if let Some(raised) = raised {
            let hard = now.maximum.map_or(MOST, |maximum| maximum.min(MOST));
            assert!(raised >= hard, "{raised} is below the hard limit {hard}");
        }
    }
}
