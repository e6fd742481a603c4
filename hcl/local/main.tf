# No resources: nothing can be downloaded, so the local provider is pure computation.
# The IP is derived from vm_id so that apply, refresh and re-apply agree; address_epoch
# (set only from outside, as TF_VAR_address_epoch) stands for the cloud moving the VM, so a
# refresh has a change to find. address (set only from outside, as TF_VAR_address) gives the
# VM a real address instead, such as 127.0.0.1 for a test's SSH server.
locals {
  derived_ip = cidrhost("10.77.0.0/16", (parseint(substr(md5(var.vm_id), 0, 4), 16) + var.address_epoch) % 65000 + 2)
  vm_ip      = var.address != "" ? var.address : local.derived_ip
}
