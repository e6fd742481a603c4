pub mod admin;
pub mod health;
pub mod providers;
pub mod vms;
