# No resources: nothing can be downloaded, so the local provider is pure computation.
# The IP is derived from vm_id so that apply, refresh and re-apply agree.
locals {
  vm_ip = cidrhost("10.77.0.0/16", parseint(substr(md5(var.vm_id), 0, 4), 16) % 65000 + 2)
}
