//! Small cluster templates for the tests, written to a directory of their own.

/// A clusters directory with two small templates: `pair` (a k3s server, then one to three
/// agents joining it once k3s is on the server) and `stuck` (as `pair` with `servers`
/// servers and a gate of `gate_secs`, for clusters whose nodes never boot).
pub fn test_templates(gate_secs: u32, servers: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("registry.toml"),
        "[[clusters]]\nname = \"pair\"\n\n[[clusters]]\nname = \"stuck\"\n",
    )
    .unwrap();
    for (name, within, count) in [("pair", 600, 1), ("stuck", gate_secs, servers)] {
        let text = pair(name, within, count);
        std::fs::write(dir.path().join(format!("{name}.ncl")), text).unwrap();
    }
    dir
}

fn pair(name: &str, within: u32, servers: u32) -> String {
    format!(
        r#"{{
  name = "{name}",
  description = "A k3s server and one to three agents joining it.",
  roles = [
    {{
      name = "server",
      count = {servers},
      templates = ["medium"],
      taskservs = [
        {{ name = "k3s", params = {{ role = "server", token_file = "/var/lib/provisioning/cluster/secret" }} }},
      ],
    }},
    {{
      name = "worker",
      count = {{ min = 1, max = 3, default = 1 }},
      templates = ["medium"],
      taskservs = [
        {{
          name = "k3s",
          params = {{
            role = "agent",
            server_url = "{{{{ roles.server[0].outputs.server_url }}}}",
            token_file = "/var/lib/provisioning/cluster/secret",
          }},
        }},
      ],
    }},
  ],
  order = [["server"], ["worker"]],
  health_gates = [
    {{ role = "server", taskserv = "k3s", nodes = "all", within_secs = {within} }},
  ],
  on_failure = 'rollback,
}}
"#
    )
}
