# Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the runner's environment.
provider "aws" {
  region = var.region

  default_tags {
    tags = {
      env   = "naic-vm"
      vm_id = var.vm_id
    }
  }
}

locals {
  name       = "${var.vm_name}-${var.vm_id}"
  ami_is_id  = length(regexall("^ami-[0-9a-f]+$", var.image_name)) > 0
  use_subnet = var.subnet_id != ""
}

# image_name is either an AMI id or a name pattern of the owners' AMIs (newest wins).
data "aws_ami" "vm" {
  count       = local.ami_is_id ? 0 : 1
  most_recent = true
  owners      = var.ami_owners

  filter {
    name   = "name"
    values = [var.image_name]
  }
}

data "aws_subnet" "vm" {
  count = local.use_subnet ? 1 : 0
  id    = var.subnet_id
}

resource "aws_key_pair" "vm" {
  key_name   = "${local.name}-kp"
  public_key = var.public_key
}

# Without vpc_id the group lands in the default VPC, where the VM's default subnet is.
resource "aws_security_group" "vm" {
  name        = "naic-${local.name}-ssh-icmp" # a name may not start with sg-
  description = "SSH and ICMP from the VM's allowed CIDRs"
  vpc_id      = local.use_subnet ? data.aws_subnet.vm[0].vpc_id : null
}

resource "aws_vpc_security_group_ingress_rule" "ssh" {
  for_each = toset(var.allow_ssh_from_v4)

  security_group_id = aws_security_group.vm.id
  description       = "SSH"
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
  cidr_ipv4         = each.value
}

resource "aws_vpc_security_group_ingress_rule" "icmp" {
  for_each = toset(var.allow_ssh_from_v4)

  security_group_id = aws_security_group.vm.id
  description       = "ICMP"
  ip_protocol       = "icmp"
  from_port         = -1
  to_port           = -1
  cidr_ipv4         = each.value
}

# Terraform removes a new group's default egress rule; cloud-init needs the way out.
resource "aws_vpc_security_group_egress_rule" "all" {
  security_group_id = aws_security_group.vm.id
  description       = "All outbound traffic"
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
}

resource "aws_instance" "vm" {
  ami                         = local.ami_is_id ? var.image_name : data.aws_ami.vm[0].id
  instance_type               = var.flavor_name
  key_name                    = aws_key_pair.vm.key_name
  subnet_id                   = local.use_subnet ? var.subnet_id : null
  vpc_security_group_ids      = [aws_security_group.vm.id]
  associate_public_ip_address = true
  # The provider encodes user_data itself.
  user_data = var.user_data

  root_block_device {
    volume_size = var.disk_size_gb
    volume_type = "gp3"
  }

  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  tags = {
    Name = local.name
  }

  depends_on = [
    aws_vpc_security_group_ingress_rule.ssh,
    aws_vpc_security_group_ingress_rule.icmp,
    aws_vpc_security_group_egress_rule.all,
  ]
}
