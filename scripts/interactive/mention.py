#!/usr/bin/env python3
"""Drive an interactive Claude Code session in a terminal (pexpect) against
`ctxasm mock-server`: a first prompt that @-mentions a file, then three
plain prompts (plain answers). Keeps the server's record (wire.jsonl),
the transcripts, what the terminal showed (tty.log) and
conversation.jsonl (per conversation request, the SHA-256 of its system
and tools as sent and its messages) in OUT_DIR: whether the next prompts
send the first one with the file it mentioned. Needs `pip install pexpect`
and a release build.

usage: scripts/interactive/mention.py CLAUDE_BIN OUT_DIR
"""
import os, sys
from capture_common import T, terminal_sandbox, mock_server, cli_env, keep, Terminal
claude, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
root, home, proj = terminal_sandbox('ctxasm-mention', {'README.md': '# demo\n'})
srv, base = mock_server(root, out, [{"when": {}, "reply": {"blocks": [T("ok")]}}], stderr=None)
env = cli_env(home, base, TERM="xterm-256color", DISABLE_ERROR_REPORTING="1")
t = Terminal(claude, proj, env, out)
t.prompt('first: look at @README.md please')
t.prompt('second: and now?')
t.prompt('third: anything else?')
t.prompt('fourth: done?')
t.quit()
keep(home, out, srv)
print('done')
