"""Everything topoctl knows about SGLang's spelling, in one package.

flags    the real server flag set of each release (data/sglang-<version>.json, extracted from wheels)
spelling how each launch setting is written for SGLang: flag names per version, env variables, values
launch   reading a launch (launch.env or a command line) the way SGLang's argparse reads it

rules/ states what a setting means and when it is safe; this package says how SGLang spells it.
"""
