//! The complete small taskserv of `docs/taskservs.md` loads, renders and passes shellcheck,
//! so that the documentation cannot drift from what the crate accepts.

use std::collections::BTreeMap;
use std::fs;

use domain::taskservs::{TaskservName, TaskservRequest};
use taskservs::Catalog;

use super::{big_ubuntu, facts, shellcheck};

/// The fenced block following the line "`<file>`:" in the doc.
fn block_after(doc: &str, file: &str) -> String {
    let start = doc
        .find(&format!("`{file}`:\n\n```"))
        .unwrap_or_else(|| panic!("the doc has no block for {file}"));
    let body = &doc[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_owned()
}

#[test]
fn the_documented_example_taskserv_loads_renders_and_passes_shellcheck() {
    let doc = fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/taskservs.md"
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("registry.toml"),
        "[[taskservs]]\nname = \"memcached\"\n",
    )
    .unwrap();
    fs::create_dir(dir.path().join("memcached")).unwrap();
    for file in ["taskserv.ncl", "install.sh.j2", "health.sh.j2"] {
        fs::write(
            dir.path().join("memcached").join(file),
            block_after(&doc, file),
        )
        .unwrap();
    }
    let catalog = Catalog::load(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let request = TaskservRequest {
        name: TaskservName::parse("memcached").unwrap(),
        params: Default::default(),
    };
    let plan = catalog
        .resolve(&[request], &big_ubuntu(), &|_, _| true)
        .unwrap();
    let rendered = catalog
        .render(&plan[0], &facts(), &BTreeMap::new())
        .unwrap();
    shellcheck("memcached/install.sh", &rendered.install);
    shellcheck("memcached/health.sh", &rendered.health);
    let written = super::outputs::written_outputs("memcached/install.sh", &rendered.install);
    let declared: Vec<&String> = catalog
        .definitions()
        .flat_map(|d| d.outputs.keys())
        .collect();
    assert_eq!(written.iter().collect::<Vec<_>>(), declared);
}
