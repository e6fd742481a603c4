//! What a user may hold at once: limits (from the policies), usage (their VMs not
//! destroyed), and whether one more VM fits. No I/O: the API loads both and asks here.

use std::fmt;

/// What one VM takes, from its template, and for how long it is asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Size {
    pub vcpus: u64,
    pub ram_mib: u64,
    pub gpus: u64,
}

impl Size {
    /// A template's figures: `cpu` cores, `ram_gb` GiB, and its `gpu` description
    /// (`"4 x AMD Instinct MI250X"`: 4; a description without a count: 1; none: 0).
    pub fn of_template(cpu: i32, ram_gb: i32, gpu: Option<&str>) -> Self {
        Size {
            vcpus: cpu.max(0) as u64,
            ram_mib: ram_gb.max(0) as u64 * 1024,
            gpus: gpu_count(gpu),
        }
    }
}

/// How many GPUs a template's `gpu` description names: its leading count (`2 x L40S`,
/// `2x A100`), else 1 for any description, 0 for none.
pub fn gpu_count(gpu: Option<&str>) -> u64 {
    let Some(text) = gpu.map(str::trim).filter(|g| !g.is_empty()) else {
        return 0;
    };
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let rest = text[digits.len()..].trim_start();
    match digits.parse::<u64>() {
        Ok(n) if rest.starts_with(['x', 'X', '×']) => n,
        _ => 1,
    }
}

/// What a user holds now: their VMs that are not destroyed, and what those take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub vms: u64,
    pub vcpus: u64,
    pub ram_mib: u64,
    pub gpus: u64,
}

impl Usage {
    pub fn add(&mut self, size: Size) {
        self.add_many(size, 1);
    }

    /// `count` VMs of `size`.
    pub fn add_many(&mut self, size: Size, count: u64) {
        self.vms += count;
        self.vcpus += size.vcpus * count;
        self.ram_mib += size.ram_mib * count;
        self.gpus += size.gpus * count;
    }
}

/// One limit and the policy that sets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    pub value: u64,
    pub policy: String,
}

/// A user's limits. With no limits policy applying, every limit is 0 from `none`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub vms: Limit,
    pub vcpus: Limit,
    pub ram_mib: Limit,
    pub gpus: Limit,
    /// The longest duration a VM may be asked for, in hours.
    pub max_hours: Limit,
}

impl Limits {
    /// No limits policy applies: nothing fits.
    pub fn none() -> Self {
        let zero = || Limit {
            value: 0,
            policy: "none".into(),
        };
        Limits {
            vms: zero(),
            vcpus: zero(),
            ram_mib: zero(),
            gpus: zero(),
            max_hours: zero(),
        }
    }

    /// Whether one more VM of `size`, asked for `hours`, fits beside `usage`; the first
    /// limit it passes otherwise.
    pub fn admit(&self, usage: &Usage, size: Size, hours: u64) -> Result<(), QuotaExceeded> {
        let mut after = *usage;
        after.add(size);
        let checks = [
            ("VMs", after.vms, &self.vms),
            ("vCPUs", after.vcpus, &self.vcpus),
            ("MiB of RAM", after.ram_mib, &self.ram_mib),
            ("GPUs", after.gpus, &self.gpus),
            ("hours", hours, &self.max_hours),
        ];
        for (what, asked, limit) in checks {
            if asked > limit.value {
                return Err(QuotaExceeded {
                    what,
                    asked,
                    limit: limit.clone(),
                });
            }
        }
        Ok(())
    }
}

/// A limit one more VM would pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaExceeded {
    pub what: &'static str,
    /// What the user would hold (or, for `hours`, asks for).
    pub asked: u64,
    pub limit: Limit,
}

impl fmt::Display for QuotaExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.what {
            "hours" => write!(
                f,
                "denied by policy {:?}: {} hours is longer than the {} allowed",
                self.limit.policy, self.asked, self.limit.value
            ),
            what => write!(
                f,
                "denied by policy {:?}: {} {what} would be more than the {} allowed",
                self.limit.policy, self.asked, self.limit.value
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(vms: u64, vcpus: u64, ram_mib: u64, gpus: u64, max_hours: u64) -> Limits {
        let limit = |value| Limit {
            value,
            policy: "quota".into(),
        };
        Limits {
            vms: limit(vms),
            vcpus: limit(vcpus),
            ram_mib: limit(ram_mib),
            gpus: limit(gpus),
            max_hours: limit(max_hours),
        }
    }

    const SMALL: Size = Size {
        vcpus: 2,
        ram_mib: 4096,
        gpus: 0,
    };

    #[test]
    fn given_vms_counted_by_size_then_usage_is_their_sum() {
        let (mut one_by_one, mut counted) = (Usage::default(), Usage::default());
        for _ in 0..3 {
            one_by_one.add(SMALL);
        }
        counted.add_many(SMALL, 3);
        assert_eq!(counted, one_by_one);
        assert_eq!((counted.vms, counted.vcpus, counted.ram_mib), (3, 6, 12288));
    }

    #[test]
    fn given_room_for_one_more_vm_when_asked_then_it_fits() {
        let mut usage = Usage::default();
        usage.add(SMALL);
        assert_eq!(limits(2, 4, 8192, 0, 48).admit(&usage, SMALL, 48), Ok(()));
    }

    #[test]
    fn given_the_vm_limit_reached_when_one_more_is_asked_then_the_vm_limit_refuses_it() {
        let mut usage = Usage::default();
        usage.add(SMALL);
        usage.add(SMALL);
        let refused = limits(2, 100, 100_000, 0, 48)
            .admit(&usage, SMALL, 1)
            .unwrap_err();
        assert_eq!(
            (refused.what, refused.asked, refused.limit.value),
            ("VMs", 3, 2)
        );
        assert_eq!(
            refused.to_string(),
            "denied by policy \"quota\": 3 VMs would be more than the 2 allowed"
        );
    }

    #[test]
    fn given_vcpus_ram_gpus_or_hours_too_many_then_that_limit_refuses() {
        let usage = Usage::default();
        let gpu = Size {
            vcpus: 8,
            ram_mib: 65536,
            gpus: 4,
        };
        let refuse = |l: Limits, hours| l.admit(&usage, gpu, hours).unwrap_err().what;
        assert_eq!(refuse(limits(9, 4, 1 << 20, 9, 48), 1), "vCPUs");
        assert_eq!(refuse(limits(9, 64, 1024, 9, 48), 1), "MiB of RAM");
        assert_eq!(refuse(limits(9, 64, 1 << 20, 2, 48), 1), "GPUs");
        assert_eq!(refuse(limits(9, 64, 1 << 20, 9, 48), 49), "hours");
    }

    #[test]
    fn given_no_limits_policy_then_nothing_fits() {
        let refused = Limits::none()
            .admit(&Usage::default(), SMALL, 1)
            .unwrap_err();
        assert_eq!(refused.limit.policy, "none");
    }

    #[test]
    fn gpu_counts_come_from_the_templates_description() {
        assert_eq!(gpu_count(None), 0);
        assert_eq!(gpu_count(Some("")), 0);
        assert_eq!(gpu_count(Some("4 x AMD Instinct MI250X")), 4);
        assert_eq!(gpu_count(Some("2x A100")), 2);
        assert_eq!(gpu_count(Some("1 x L40S")), 1);
        assert_eq!(gpu_count(Some("NVIDIA A100")), 1);
        assert_eq!(gpu_count(Some("3090")), 1);
        let size = Size::of_template(8, 64, Some("2 x L40S"));
        assert_eq!((size.vcpus, size.ram_mib, size.gpus), (8, 65536, 2));
    }
}
