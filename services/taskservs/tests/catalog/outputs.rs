//! The outputs a taskserv declares are the ones its install script writes: cluster
//! templates refer to declared outputs only, and the simulated boot reports them.

use std::collections::{BTreeMap, BTreeSet};

use domain::taskservs::TaskservRequest;
use taskservs::Catalog;

use super::{big_ubuntu, facts, shipped};

const OUTPUTS_FILE: &str = ">>\"$TASKSERV_OUTPUTS\"";

/// The key of a line `echo "key=..."`; `None` for any other line.
fn echoed_key(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("echo \"")
        .or_else(|| line.strip_prefix("echo '"))?;
    let (key, _) = rest.split_once('=')?;
    Some(key)
}

/// The keys a rendered install script appends to `$TASKSERV_OUTPUTS`, in either form the
/// shipped scripts use: `echo "key=..." >>"$TASKSERV_OUTPUTS"`, or `echo "key=..."` lines
/// in a `{ ... } >>"$TASKSERV_OUTPUTS"` group. Any other write to the file fails the scan,
/// so that a new form cannot slip past it.
pub(crate) fn written_outputs(label: &str, script: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = script.lines().map(str::trim).collect();
    let mut keys = BTreeSet::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.contains("TASKSERV_OUTPUTS") {
            continue;
        }
        let statement = line
            .strip_suffix(OUTPUTS_FILE)
            .unwrap_or_else(|| panic!("{label}: line {}: an unknown write: {line}", i + 1))
            .trim();
        if statement == "}" {
            let start = lines[..i]
                .iter()
                .rposition(|l| *l == "{")
                .unwrap_or_else(|| panic!("{label}: line {}: no `{{` opens the group", i + 1));
            for inner in &lines[start + 1..i] {
                let key = echoed_key(inner).unwrap_or_else(|| {
                    panic!("{label}: a line of an output group is not `echo \"key=...\"`: {inner}")
                });
                keys.insert(key.to_owned());
            }
        } else {
            let key = echoed_key(statement)
                .unwrap_or_else(|| panic!("{label}: line {}: an unknown write: {line}", i + 1));
            keys.insert(key.to_owned());
        }
    }
    keys
}

#[test]
fn every_shipped_taskserv_declares_exactly_the_outputs_its_install_script_writes() {
    let catalog = Catalog::load(&shipped()).unwrap();
    for def in catalog.definitions() {
        let request = TaskservRequest {
            name: def.name.clone(),
            params: Default::default(),
        };
        let plan = catalog
            .resolve(&[request], &big_ubuntu(), &|_, _| true)
            .unwrap_or_else(|r| panic!("{r}"));
        let step = plan.iter().find(|s| s.name == def.name).unwrap();
        let rendered = catalog
            .render(step, &facts(), &BTreeMap::new())
            .unwrap_or_else(|e| panic!("{e}"));
        let label = format!("{}/install.sh", def.name);
        let written = written_outputs(&label, &rendered.install);
        let declared: BTreeSet<String> = def.outputs.keys().cloned().collect();
        assert!(!written.is_empty(), "{label} writes no output");
        assert_eq!(
            written, declared,
            "{}: the outputs its install script writes (left) differ from those it declares (right)",
            def.name
        );
        assert!(
            def.outputs.values().all(|d| !d.trim().is_empty()),
            "{}: every output has a description",
            def.name
        );
    }
}

#[test]
fn the_scan_reads_single_lines_and_groups_and_refuses_other_writes() {
    let script = "x=1\necho \"port=1\" >>\"$TASKSERV_OUTPUTS\"\n{\n  echo \"url=http://a/\"\n  \
                  echo 'path=/p'\n} >>\"$TASKSERV_OUTPUTS\"\n";
    let keys: Vec<String> = written_outputs("t", script).into_iter().collect();
    assert_eq!(keys, ["path", "port", "url"]);
    let other = std::panic::catch_unwind(|| {
        written_outputs("t", "printf 'a=1\\n' >>\"$TASKSERV_OUTPUTS\"\n")
    });
    assert!(other.is_err());
}

#[test]
fn an_output_key_that_is_not_a_word_is_refused_at_load() {
    let err = super::load_with_definition(
        "{\n  name = \"redis\",\n  version = \"1\",\n  description = \"d\",\n  \
         category = \"c\",\n  os = [\"debian\"],\n  outputs = { \"a b\" = \"x\" },\n}\n",
    );
    assert!(err.contains("redis declares the output \"a b\""), "{err}");
}
