# frozen_string_literal: true

# Renders a cookbook template with Ruby's standard ERB the way Chef does: `node` is the generated attributes
# and each template variable becomes an instance variable. Usage: ruby render_erb.rb TEMPLATE NODE_JSON [VARS_JSON]
require 'erb'
require 'json'

# The template's view of the world: `node[...]` and `@variables`.
class TemplateContext
  attr_reader :node

  def initialize(node, variables)
    @node = node
    variables.each { |name, value| instance_variable_set("@#{name}", value) }
  end

  def render(source)
    ERB.new(source, trim_mode: '-').result(binding)
  end
end

template, node_json, vars_json = ARGV
node = JSON.parse(File.read(node_json))
variables = vars_json ? JSON.parse(File.read(vars_json)) : {}
print TemplateContext.new(node, variables).render(File.read(template))
