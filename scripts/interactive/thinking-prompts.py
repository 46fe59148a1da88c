#!/usr/bin/env python3
"""Drive Claude Code with stream-json input (one process) against
`ctxasm mock-server`: a plain prompt, a prompt that asks for thinking
("think hard": releases before adaptive thinking send `thinking` with a
budget for that prompt's requests only) answered with a thinking block
and a Read, then a plain prompt. The stand-in simulates the cache on the
bytes sent, so the transcript's usage shows what a change of thinking
config does to the messages cache. Keeps in OUT_DIR the server's record
(wire.jsonl), the transcripts and requests.jsonl (per conversation
request: its `thinking` param and messages' count). Needs a release build.

usage: scripts/interactive/thinking-prompts.py CLAUDE_BIN OUT_DIR
"""
import json, os, subprocess, sys, time, shutil
from capture_common import T, TH, TU, sandbox, mock_server, cli_env, keep
claude, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
shutil.rmtree(out, ignore_errors=True)
root, home, proj = sandbox('ctxasm-thinking-prompts', {'README.md': '# demo\n', 'app.js': 'console.log("hi");\n'})
rules = [{"when": {"last_user_contains": "think hard", "last_is_tool_result": False, "has_tool": "Read"}, "once": True,
          "reply": {"blocks": [TH("I should read the file."), T("Reading."), TU("Read", {"file_path": proj + "/app.js"})]}},
         {"when": {"last_is_tool_result": True}, "once": True, "reply": {"blocks": [TH("It logs hi."), T("It logs hi.")]}},
         {"when": {}, "reply": {"blocks": [T("ok")]}}]
srv, base = mock_server(root, out, rules)
env = cli_env(home, base)
p = subprocess.Popen([claude, '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose', '--permission-mode', 'acceptEdits', '--allowedTools', 'Read'],
                     cwd=proj, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(out + '/stderr.log', 'a'), text=True)
for prompt in ["first: hello there", "second: think hard about app.js and read it", "third: thanks"]:
    p.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n"); p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line or json.loads(line).get('type') == 'result':
            break
    time.sleep(1)
p.stdin.close(); p.wait(30)
keep(home, out, srv)
with open(out + '/requests.jsonl', 'w') as f:
    for line in open(out + '/wire.jsonl'):
        body = json.loads(line)['body']
        if body.get('tools'):
            f.write(json.dumps({"thinking": body.get('thinking'), "messages": len(body['messages'])}) + "\n")
print('done')
