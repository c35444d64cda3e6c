# Modern Packer (1.7+) installs the Amazon plugin from here with `packer init packer/`.
# Packer 1.6.6 (Debian's, used by the tests) has the amazon-ebs builder built in and rejects this block,
# so provision/packer/runner.py leaves this file out of the build directory for Packer older than 1.7.
packer {
  required_plugins {
    amazon = {
      version = ">= 1.2.0"
      source  = "github.com/hashicorp/amazon"
    }
  }
}
