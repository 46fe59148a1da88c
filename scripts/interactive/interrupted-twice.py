#!/usr/bin/env python3
"""Drive an interactive Claude Code session in a terminal (pexpect) against
`ctxasm mock-server`: a prompt, a Bash call whose permission dialog is
refused with Esc, a second prompt and refusal, two more prompts. Keeps the
server's record (wire.jsonl), the transcripts and what the terminal showed
(tty.log) in OUT_DIR. Needs `pip install pexpect` and a release build.

usage: scripts/interactive/interrupted-twice.py CLAUDE_BIN OUT_DIR
"""
import json, os, subprocess, sys, time, shutil, pexpect
claude, out = sys.argv[1], sys.argv[2]
root=os.path.join(os.environ.get('TMPDIR', '/tmp'), 'ctxasm-interactive'); shutil.rmtree(root, ignore_errors=True)
home, proj = root+'/home', root+'/proj'
os.makedirs(home); os.makedirs(proj)
open(proj+'/README.md','w').write('# demo\n')
subprocess.run(['git','init','-q','-b','main'],cwd=proj)
key='sk-ant-capture-0000000000000000000000'
json.dump({"hasCompletedOnboarding": True, "theme": "dark", "numStartups": 5,
           "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
           "projects": {proj: {"hasTrustDialogAccepted": True, "allowedTools": [], "hasCompletedProjectOnboarding": True}}},
          open(home+'/.claude.json','w'))
T=lambda s: {"type":"text","text":s}
TU=lambda n,i: {"type":"tool_use","name":n,"input":i}
rules=[{"when":{"last_user_contains":"first","last_is_tool_result":False,"has_tool":"Bash"},"once":True,"reply":{"blocks":[T("Cleaning."),TU("Bash",{"command":"rm -rf build","description":"Clean build"})]}},
       {"when":{"last_user_contains":"second","has_tool":"Bash"},"once":True,"reply":{"blocks":[T("Cleaning more."),TU("Bash",{"command":"rm -rf dist","description":"Clean dist"})]}},
       {"when":{"last_user_contains":"third"},"reply":{"blocks":[T("Third answer.")]}},
       {"when":{"last_user_contains":"fourth"},"reply":{"blocks":[T("Fourth answer.")]}},
       {"when":{},"reply":{"blocks":[T("ok")]}}]
json.dump(rules, open(root+'/rules.json','w'))
os.makedirs(out, exist_ok=True)
srv=subprocess.Popen([os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'target', 'release', 'ctxasm'),'mock-server','--addr','127.0.0.1:0','--record',out+'/wire.jsonl','--script',root+'/rules.json'],stdout=subprocess.PIPE,text=True)
base='http://'+srv.stdout.readline().strip()[len('listening on '):]
env={"PATH":os.environ["PATH"],"HOME":home,"IS_SANDBOX":"1","TERM":"xterm-256color","ANTHROPIC_BASE_URL":base,"ANTHROPIC_API_KEY":key,
     "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC":"1","DISABLE_TELEMETRY":"1","DISABLE_AUTOUPDATER":"1","DISABLE_ERROR_REPORTING":"1"}
log=open(out+'/tty.log','w')
c=pexpect.spawn(claude, [], cwd=proj, env=env, encoding='utf-8', dimensions=(50,150), timeout=60)
import re
def wait(s=3):
    end=time.time()+s
    buf=''
    while time.time()<end:
        try: buf+=c.read_nonblocking(100000, timeout=0.3)
        except pexpect.TIMEOUT: pass
        except pexpect.EOF: break
    t=re.sub(r'\x1b\[[0-9;?]*[a-zA-Z]','',buf)
    log.write('\n=====\n'+t[-1500:]); log.flush()
wait(6)
def prompt(text):
    c.send(text); wait(1); c.send('\r'); wait(6)
prompt('first: clean the build')
c.send('\x1b'); wait(4)   # reject the permission dialog
prompt('second: clean dist too')
c.send('\x1b'); wait(4)
prompt('third: and now?')
prompt('fourth: done?')
c.sendcontrol('c'); wait(1); c.sendcontrol('c'); wait(2)
c.terminate(force=True)
srv.terminate(); srv.wait()
shutil.copytree(home+'/.claude/projects', out+'/transcripts', dirs_exist_ok=True)
print('done')
