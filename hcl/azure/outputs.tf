output "vm_ip" {
  description = "Public IPv4 address of the VM."
  value       = azurerm_public_ip.vm.ip_address
}

output "vm_provision_status" {
  description = "Final status reported to the service."
  value       = "PROVISIONING_COMPLETED"
  depends_on  = [azurerm_linux_virtual_machine.vm]
}
