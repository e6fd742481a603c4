# Credentials: ARM_CLIENT_ID, ARM_CLIENT_SECRET, ARM_TENANT_ID and ARM_SUBSCRIPTION_ID from the
# runner's environment.
provider "azurerm" {
  features {}
}

locals {
  # Catalog aliases for marketplace images; anything else is publisher:offer:sku:version.
  image_aliases = {
    "Ubuntu-2204-lts" = "Canonical:0001-com-ubuntu-server-jammy:22_04-lts:latest"
    "Ubuntu-2404-lts" = "Canonical:ubuntu-24_04-lts:server-gen1:latest"
  }
  image = split(":", lookup(local.image_aliases, var.image_name, var.image_name))
}

resource "azurerm_resource_group" "vm" {
  name     = "${var.vm_id}-resources"
  location = var.region
}

resource "azurerm_virtual_network" "vm" {
  name                = "${var.vm_id}-network"
  address_space       = ["10.0.0.0/16"]
  location            = azurerm_resource_group.vm.location
  resource_group_name = azurerm_resource_group.vm.name
}

resource "azurerm_subnet" "vm" {
  name                 = "internal"
  resource_group_name  = azurerm_resource_group.vm.name
  virtual_network_name = azurerm_virtual_network.vm.name
  address_prefixes     = ["10.0.2.0/24"]
}

# Standard SKU (Basic public IPs are retired): static, and closed unless an NSG allows.
resource "azurerm_public_ip" "vm" {
  name                = "${var.vm_id}-public-ip"
  location            = azurerm_resource_group.vm.location
  resource_group_name = azurerm_resource_group.vm.name
  allocation_method   = "Static"
  sku                 = "Standard"
}

# The VM's one and only NIC.
resource "azurerm_network_interface" "vm" {
  name                = "${var.vm_id}-nic"
  location            = azurerm_resource_group.vm.location
  resource_group_name = azurerm_resource_group.vm.name

  ip_configuration {
    name                          = "public"
    subnet_id                     = azurerm_subnet.vm.id
    private_ip_address_allocation = "Dynamic"
    public_ip_address_id          = azurerm_public_ip.vm.id
  }
}

resource "azurerm_network_security_group" "vm" {
  name                = "${var.vm_id}-nsg"
  location            = azurerm_resource_group.vm.location
  resource_group_name = azurerm_resource_group.vm.name

  security_rule {
    name                       = "SSH"
    priority                   = 1001
    direction                  = "Inbound"
    access                     = "Allow"
    protocol                   = "Tcp"
    source_port_range          = "*"
    destination_port_range     = "22"
    source_address_prefixes    = var.allow_ssh_from_v4
    destination_address_prefix = "*"
  }

  security_rule {
    name                       = "ICMP"
    priority                   = 1002
    direction                  = "Inbound"
    access                     = "Allow"
    protocol                   = "Icmp"
    source_port_range          = "*"
    destination_port_range     = "*"
    source_address_prefixes    = var.allow_ssh_from_v4
    destination_address_prefix = "*"
  }
}

# The NSG guards the VM's own NIC (the old system attached it to an unused second NIC).
resource "azurerm_network_interface_security_group_association" "vm" {
  network_interface_id      = azurerm_network_interface.vm.id
  network_security_group_id = azurerm_network_security_group.vm.id
}

resource "azurerm_linux_virtual_machine" "vm" {
  # Azure allows 64 characters: 36 (uuid) + 1 + 24 + 3.
  name                  = "${var.vm_id}-${substr(var.vm_name, 0, 24)}-vm"
  computer_name         = var.vm_name
  resource_group_name   = azurerm_resource_group.vm.name
  location              = azurerm_resource_group.vm.location
  size                  = var.flavor_name
  admin_username        = var.username
  network_interface_ids = [azurerm_network_interface.vm.id]
  # Azure requires custom_data base64-encoded.
  custom_data = base64encode(var.user_data)

  admin_ssh_key {
    username   = var.username
    public_key = var.public_key
  }

  os_disk {
    caching              = "ReadWrite"
    storage_account_type = "Standard_LRS"
    disk_size_gb         = var.disk_size_gb
  }

  source_image_reference {
    publisher = local.image[0]
    offer     = local.image[1]
    sku       = local.image[2]
    version   = local.image[3]
  }

  tags = {
    env   = "naic-vm"
    vm_id = var.vm_id
  }

  # The SSH restriction is in place before the VM is reachable.
  depends_on = [azurerm_network_interface_security_group_association.vm]
}
