//! The watcher and the reconciler against a scripted API server.
