//! `PROVISIONING_FRONTEND_DIR`: a built single-page app (a `dist/` with its `index.html`)
//! that the API's server serves at `/`.

use std::path::PathBuf;

use super::ConfigError;

/// The frontend's directory, or `None` when unset. Checked at start: a directory with an
/// `index.html`, so a wrong path fails the start rather than every page.
pub fn frontend_dir(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<PathBuf>, ConfigError> {
    let Some(dir) = var("PROVISIONING_FRONTEND_DIR") else {
        return Ok(None);
    };
    let dir = PathBuf::from(dir);
    if !dir.join("index.html").is_file() {
        return Err(ConfigError {
            name: "PROVISIONING_FRONTEND_DIR",
            reason: format!(
                "{} is not a built frontend: it has no index.html",
                dir.display()
            ),
        });
    }
    Ok(Some(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frontend_is_a_directory_with_an_index() {
        assert_eq!(frontend_dir(&|_| None).unwrap(), None);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap().to_owned();
        let set = move |_: &str| Some(path.clone());
        assert!(frontend_dir(&set).is_err());
        std::fs::write(dir.path().join("index.html"), "<html></html>").unwrap();
        assert_eq!(frontend_dir(&set).unwrap(), Some(dir.path().to_owned()));
    }
}
