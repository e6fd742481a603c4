# The `local` development provider: no provider plugin, no credentials.
# It only validates the request and computes outputs, so `init` needs no network.
# The dispatcher adds `backend.tf` (Terraform's `pg` backend, one workspace per VM).
terraform {
  required_version = ">= 1.0.0"
}
