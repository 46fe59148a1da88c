#!/usr/bin/env python3
"""Drive an interactive Claude Code session in a terminal (pexpect) against
`ctxasm mock-server`: a prompt, a Bash call whose permission dialog is
refused with Esc, a second prompt and refusal, two more prompts. Keeps the
server's record (wire.jsonl), the transcripts, conversation.jsonl and what
the terminal showed (tty.log) in OUT_DIR. Needs `pip install pexpect` and a release build.

usage: scripts/interactive/interrupted-twice.py CLAUDE_BIN OUT_DIR
"""
import os, sys
from capture_common import T, TU, terminal_sandbox, mock_server, cli_env, keep, Terminal
claude, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
root, home, proj = terminal_sandbox('ctxasm-interactive', {'README.md': '# demo\n'})
rules=[{"when":{"last_user_contains":"first","last_is_tool_result":False,"has_tool":"Bash"},"once":True,"reply":{"blocks":[T("Cleaning."),TU("Bash",{"command":"rm -rf build","description":"Clean build"})]}},
       {"when":{"last_user_contains":"second","has_tool":"Bash"},"once":True,"reply":{"blocks":[T("Cleaning more."),TU("Bash",{"command":"rm -rf dist","description":"Clean dist"})]}},
       {"when":{"last_user_contains":"third"},"reply":{"blocks":[T("Third answer.")]}},
       {"when":{"last_user_contains":"fourth"},"reply":{"blocks":[T("Fourth answer.")]}},
       {"when":{},"reply":{"blocks":[T("ok")]}}]
srv, base = mock_server(root, out, rules, stderr=None)
env = cli_env(home, base, TERM="xterm-256color", DISABLE_ERROR_REPORTING="1")
t = Terminal(claude, proj, env, out)
t.prompt('first: clean the build')
t.escape()   # reject the permission dialog
t.prompt('second: clean dist too')
t.escape()
t.prompt('third: and now?')
t.prompt('fourth: done?')
t.quit()
keep(home, out, srv)
print('done')
