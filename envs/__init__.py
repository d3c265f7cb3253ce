"""Environments shipped with seed-gym, one subpackage each; registered through the registry."""
