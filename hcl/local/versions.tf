# The `local` development provider: no provider plugin, no credentials.
# It only validates the request and computes outputs, so `init` needs no network.
terraform {
  required_version = ">= 1.0.0"

  # State lives in Postgres, one workspace per VM. The runner passes the
  # connection at init: -backend-config=conn_str=postgres://...
  backend "pg" {}
}
