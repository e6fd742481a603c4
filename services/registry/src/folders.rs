//! A provider's Terraform is one or more folders of `hcl/`, whose files are copied flat, in
//! order, into one working directory: the Kubernetes executor ships that directory as a
//! ConfigMap, which holds no subfolders, so a module in `../modules` could not be there.
//! Shared files live in shared folders (`common`, `openstack`) instead.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};

/// One file of a working directory: its name there and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub name: String,
    pub path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("lists no folder")]
    NoFolder,
    #[error("folder {0} does not exist")]
    Missing(PathBuf),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is a subfolder, but a working directory is flat")]
    Subfolder(PathBuf),
    #[error("{name} is in both {} and {}, which are copied into one working directory", .first.display(), .second.display())]
    Clash {
        name: String,
        first: PathBuf,
        second: PathBuf,
    },
}

/// The files of `folders`, in order (by name within a folder), as one flat directory.
/// Local Terraform leftovers of a developer's own runs are not part of a provider.
pub fn flat_files(folders: &[PathBuf]) -> Result<Vec<SourceFile>, FolderError> {
    if folders.is_empty() {
        return Err(FolderError::NoFolder);
    }
    let mut files: Vec<SourceFile> = vec![];
    for folder in folders {
        if !folder.is_dir() {
            return Err(FolderError::Missing(folder.clone()));
        }
        let read = |source| FolderError::Read {
            path: folder.clone(),
            source,
        };
        let mut own = vec![];
        for entry in std::fs::read_dir(folder).map_err(read)? {
            let entry = entry.map_err(read)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".terraform" || name.starts_with("terraform.tfstate") {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                return Err(FolderError::Subfolder(path));
            }
            own.push(SourceFile { name, path });
        }
        own.sort_by(|a, b| a.name.cmp(&b.name));
        for file in own {
            if let Some(first) = files.iter().find(|f| f.name == file.name) {
                return Err(FolderError::Clash {
                    name: file.name,
                    first: parent(&first.path),
                    second: folder.clone(),
                });
            }
            files.push(file);
        }
    }
    Ok(files)
}

fn parent(path: &Path) -> PathBuf {
    path.parent().map(Path::to_owned).unwrap_or_default()
}

/// `folder = "x"` or `folders = ["common", "x"]`.
pub(crate) fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(folder) => vec![folder],
        OneOrMany::Many(folders) => folders,
    })
}
