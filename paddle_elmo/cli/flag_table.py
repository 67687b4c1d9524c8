"""The flag table of docs/FLAGS.md: made from the glossary (FLAGS) and the parsers (which commands
take each flag); paddle_elmo.cli.update_flags_doc writes it between the markers, `make flags-table`.
"""
import re

from paddle_elmo.cli.arguments import Switch
from paddle_elmo.cli.glossary import ARGPARSE_OPTIONS, FLAGS


TABLE_START, TABLE_END = '<!-- flags:start -->', '<!-- flags:end -->'


def flag_uses(parsers):
    """-> ({table name: [subcommands]}, {names that are switches}) over the parsers' options."""
    uses, switches = {}, set()
    for command, p in parsers.items():
        for action in p._actions:
            names = [s for s in action.option_strings if s not in ARGPARSE_OPTIONS]
            if names:
                uses.setdefault(names[0][2:], []).append(command)
                if isinstance(action, Switch):
                    switches.add(names[0][2:])
            elif not action.option_strings and action.dest in FLAGS:  # a positional argument of that name
                uses.setdefault(action.dest, []).append(f'{command} (argument)')
    return uses, switches


def flags_markdown(parsers):
    """The flag table, made from FLAGS and the parsers ({subcommand: parser}: which commands take
    each flag); paddle_elmo.cli.update_flags_doc writes it between the markers."""
    uses, switches = flag_uses(parsers)
    rows = ['| flag | meaning (units) | commands |', '| --- | --- | --- |']
    for name, (concept, aliases) in FLAGS.items():
        shown = f'`--{name}`' + (f' / `--no_{name}`' if name in switches else '')
        if aliases:
            shown += ' (also ' + ', '.join(f'`--{alias}`' for alias in aliases) + ')'
        concept = re.sub(r'(</?[A-Z]+>)', r'`\1`', concept)
        rows.append(f'| {shown} | {concept} | {", ".join(uses.get(name, []))} |')
    return '\n'.join(rows) + '\n'
