//! The bench's figures: each compared with a ceiling measured in the same run (or with a
//! latency limit), printed as a table with PASS or MISS, and written as JSON.

use serde_json::{json, Value};

/// What a figure must reach to PASS.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// A ceiling itself: what the others are compared with.
    Ceiling,
    /// Shown against a ceiling, with no target of its own.
    None,
    /// At least this fraction of its ceiling.
    AtLeast(f64),
    /// A latency below its ceiling (the limit), in the same unit.
    Below,
}

#[derive(Debug, Clone)]
pub struct Figure {
    pub name: &'static str,
    pub value: f64,
    pub unit: &'static str,
    /// The raw figure (or the latency limit) it is compared with.
    pub ceiling: Option<f64>,
    pub target: Target,
}

impl Figure {
    pub fn ceiling(name: &'static str, value: f64, unit: &'static str) -> Self {
        Figure {
            name,
            value,
            unit,
            ceiling: None,
            target: Target::Ceiling,
        }
    }

    pub fn against(name: &'static str, value: f64, unit: &'static str, ceiling: f64) -> Self {
        Figure {
            name,
            value,
            unit,
            ceiling: Some(ceiling),
            target: Target::None,
        }
    }

    /// A count the others were measured with, with no ceiling or target.
    pub fn measured(name: &'static str, value: f64, unit: &'static str) -> Self {
        Figure {
            name,
            value,
            unit,
            ceiling: None,
            target: Target::None,
        }
    }

    pub fn at_least(mut self, fraction: f64) -> Self {
        self.target = Target::AtLeast(fraction);
        self
    }

    /// A latency that must stay below `limit`.
    pub fn below(name: &'static str, value: f64, unit: &'static str, limit: f64) -> Self {
        Figure {
            name,
            value,
            unit,
            ceiling: Some(limit),
            target: Target::Below,
        }
    }

    pub fn ratio(&self) -> Option<f64> {
        self.ceiling.filter(|c| *c > 0.0).map(|c| self.value / c)
    }

    /// PASS or MISS, for figures with a target.
    pub fn verdict(&self) -> Option<&'static str> {
        let ratio = self.ratio();
        let pass = match self.target {
            Target::Ceiling | Target::None => return None,
            Target::AtLeast(fraction) => ratio.is_some_and(|r| r >= fraction),
            Target::Below => ratio.is_some_and(|r| r < 1.0),
        };
        Some(if pass { "PASS" } else { "MISS" })
    }

    fn target_text(&self) -> String {
        match self.target {
            Target::Ceiling => "ceiling".into(),
            Target::None => String::new(),
            Target::AtLeast(fraction) => format!(">= {fraction} x ceiling"),
            Target::Below => format!("< {} {}", self.ceiling.unwrap_or(0.0), self.unit),
        }
    }
}

/// The table `make bench` prints.
pub fn table(figures: &[Figure]) -> String {
    let mut out = format!(
        "{:<34} {:>12} {:<8} {:>12} {:>7}  {:<20} {}\n",
        "figure", "value", "unit", "ceiling", "ratio", "target", "verdict"
    );
    for f in figures {
        let ceiling = f.ceiling.map_or(String::new(), |c| format!("{c:.1}"));
        let ratio = f.ratio().map_or(String::new(), |r| format!("{r:.3}"));
        out += &format!(
            "{:<34} {:>12.1} {:<8} {:>12} {:>7}  {:<20} {}\n",
            f.name,
            f.value,
            f.unit,
            ceiling,
            ratio,
            f.target_text(),
            f.verdict().unwrap_or("")
        );
    }
    out
}

/// The JSON of `BENCH_OUT`: `{"machine": {...}, "figures": [{name, value, unit, ceiling,
/// ratio, target, verdict}]}`.
pub fn json(machine: Value, figures: &[Figure]) -> Value {
    let figures: Vec<Value> = figures
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "value": f.value,
                "unit": f.unit,
                "ceiling": f.ceiling,
                "ratio": f.ratio(),
                "target": f.target_text(),
                "verdict": f.verdict(),
            })
        })
        .collect();
    json!({ "machine": machine, "figures": figures })
}

/// The machine the figures were measured on, so that a run is only compared with runs on
/// the same kind.
pub fn machine(postgres: &str, nats: &str, quick: bool) -> Value {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|m| m.trim().to_owned());
    let memory_kb = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok());
    json!({
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu_model": cpu_model,
        "memory_mb": memory_kb.map(|kb| kb / 1024),
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "postgres": postgres,
        "nats_server": nats,
        "quick": quick,
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
    })
}

/// The `q` quantile (0..=1) of `samples`, in the samples' unit; 0 when there are none.
pub fn quantile(samples: &mut [f64], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort_by(f64::total_cmp);
    let index = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[index]
}
