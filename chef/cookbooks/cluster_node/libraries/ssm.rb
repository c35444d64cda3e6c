# frozen_string_literal: true

require 'mixlib/shellout'

module ClusterNode
  # Secrets come from SSM Parameter Store at converge time, through the AWS CLI the image scripts install.
  # They are returned to the caller only: never logged, never stored in node attributes.
  module Ssm
    def self.secure_string(name, region)
      cmd = Mixlib::ShellOut.new(
        'aws', 'ssm', 'get-parameter', '--with-decryption', '--name', name, '--region', region,
        '--query', 'Parameter.Value', '--output', 'text'
      )
      cmd.run_command
      raise "cluster_node: cannot read SSM parameter #{name} in #{region}: #{cmd.stderr.strip}" if cmd.error?

      value = cmd.stdout.strip
      raise "cluster_node: SSM parameter #{name} in #{region} is empty" if value.empty?

      value
    end
  end
end
