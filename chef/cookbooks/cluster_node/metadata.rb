# frozen_string_literal: true

name 'cluster_node'
maintainer 'Research cluster infrastructure'
maintainer_email 'infra@research.internal'
license 'Apache-2.0'
description 'Physical GPU servers: image scripts at the image package lock, SSH access, NFS, strongSwan, kubeadm join'
version '0.2.0'
chef_version '>= 17.0'
supports 'ubuntu', '>= 20.04'
