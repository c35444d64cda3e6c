# frozen_string_literal: true

module ClusterNode
  # Which server of the site this node is, and what that implies.
  module Helpers
    def cluster_server_name
      node['cluster_node']['server'] || node['hostname']
    end

    def cluster_server
      servers = node['cluster_node']['servers'] || {}
      server = servers[cluster_server_name]
      return server if server

      raise "cluster_node: #{cluster_server_name} is not a server of site #{node['cluster_node']['site']} " \
            "(servers: #{servers.keys.join(', ')}); set node['cluster_node']['server'] or the host name"
    end

    def cluster_role?(role)
      cluster_server['roles'].include?(role)
    end

    def nfs_server?
      nfs = node['cluster_node']['nfs']
      !nfs.nil? && nfs['site'] == node['cluster_node']['site'] && nfs['server'] == cluster_server_name
    end
  end
end

Chef::DSL::Recipe.include(ClusterNode::Helpers)
Chef::Resource.include(ClusterNode::Helpers)
