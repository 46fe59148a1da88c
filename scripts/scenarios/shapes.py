# Sessions as they really go (issue 13): compaction, subagents, killed
# processes, background tasks, MCP servers, other models. One scenario per
# shape of the table; see scripts/capture for the format. "mcp"
# names stdio MCP servers: "@ctxasm" is replaced by the ctxasm binary; the
# runner passes them with --mcp-config and records what each server
# answers to initialize and tools/list into env/mcp.json.

T = lambda s: {"type": "text", "text": s}
TU = lambda name, inp: {"type": "tool_use", "name": name, "input": inp}
# The compaction instruction asks for a <summary> block; without one the CLI
# asks again (2.1.3xx), which no transcript shows.
SUMMARY = {"when": {"last_user_contains": "<summary>"},
           "reply": {"blocks": [T("<analysis>The user said hi.</analysis>\n<summary>The user greeted; I answered.</summary>")]}}
DONE = {"when": {"last_is_tool_result": True}, "reply": {"blocks": [T("All done.")]}}

SCENARIOS = [
    # Rows 1, 2 (and 5, 6 on 2.1.88): a prompt, a /compact-only process, a new prompt.
    {"name": "compact-resume", "files": {"README.md": "# demo\n"},
     "rules": [SUMMARY,
               {"when": {"last_user_contains": "first"}, "reply": {"blocks": [T("First answer.")]}},
               {"when": {"last_user_contains": "third"}, "reply": {"blocks": [T("Third answer.")]}}],
     "steps": [{"prompt": "first: hi"},
               {"prompt": "/compact", "resume": True},
               {"prompt": "third: and now?", "resume": True}]},

    # Rows 3, 4, 10: the main model calls the Agent tool; the subagent runs one Bash call.
    {"name": "subagent-bash", "files": {"README.md": "# demo\n", "notes.md": "todo: x\n"},
     "rules": [{"when": {"last_user_contains": "explore", "last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [TU("Agent", {"description": "List files", "prompt": "List the files here.",
                                                  "subagent_type": "general-purpose"})]}},
               {"when": {"last_user_contains": "List the files here", "last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [TU("Bash", {"command": "ls", "description": "List files"})]}},
               DONE],
     "steps": [{"prompt": "explore this project", "args": ["--allowedTools", "Agent,Bash"]}]},

    # Rows 4, 8: another model with one tool call.
    {"name": "haiku-bash", "files": {"README.md": "# demo\n"},
     "rules": [{"when": {"last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [T("Let me look."), TU("Bash", {"command": "ls", "description": "List files"})]}},
               DONE],
     "steps": [{"prompt": "what files are here?", "args": ["--model", "haiku", "--allowedTools", "Bash"]}]},
    {"name": "sonnet-bash", "files": {"README.md": "# demo\n"},
     "rules": [{"when": {"last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [T("Let me look."), TU("Bash", {"command": "ls", "description": "List files"})]}},
               DONE],
     "steps": [{"prompt": "what files are here?", "args": ["--model", "sonnet", "--allowedTools", "Bash"]}]},

    # Rows 5, 6: a process killed in a long Bash call, then a resume with a new prompt.
    {"name": "killed-resume", "files": {"README.md": "# demo\n"},
     "rules": [{"when": {"last_user_contains": "first", "last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [TU("Bash", {"command": "python3 -c 'import time; time.sleep(600)'",
                                                 "description": "Long job"})]}},
               {"when": {"last_user_contains": "second"}, "reply": {"blocks": [T("Second answer.")]}},
               DONE],
     "steps": [{"prompt": "first: run the long job", "args": ["--allowedTools", "Bash"], "timeout": 20},
               {"prompt": "second: what happened?", "resume": True, "args": ["--allowedTools", "Bash"]}]},

    # Row 7: a background Bash task whose completion the CLI delivers later.
    {"name": "background-bash", "files": {"README.md": "# demo\n"},
     "rules": [{"when": {"last_user_contains": "background", "last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [TU("Bash", {"command": "sleep 3; echo finished", "description": "Slow job",
                                                 "run_in_background": True})]}},
               {"when": {"last_is_tool_result": True}, "once": True, "reply": {"blocks": [T("Started it.")]}},
               {"when": {"last_user_contains": "task-notification"}, "reply": {"blocks": [T("It finished.")]}},
               {"when": {"last_user_contains": "second"}, "reply": {"blocks": [T("Second answer.")]}}],
     "steps": [{"prompt": "run the slow job in the background", "args": ["--allowedTools", "Bash"]},
               {"prompt": "second: and now?", "resume": True, "args": ["--allowedTools", "Bash"]}]},

    # Row 9: an MCP server with instructions and two tools; the model calls both.
    {"name": "mcp-tools", "files": {"README.md": "# demo\n"},
     "mcp": {"probe": {"command": "@ctxasm", "args": ["mock-mcp"]}},
     "rules": [{"when": {"last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [TU("mcp__probe__inventory", {})]}},
               {"when": {"last_is_tool_result": True}, "once": True,
                "reply": {"blocks": [TU("mcp__probe__echo", {"message": "hello"})]}},
               DONE],
     "steps": [{"prompt": "what is in the inventory?",
                "args": ["--allowedTools", "mcp__probe__inventory,mcp__probe__echo"]}]},

    # Thinking across turns (issue 16; tests/fixtures/cc-2.0.37, cc-2.0.42):
    # does the client send earlier turns' thinking back at a new prompt?
    {"name": "thinking-turns", "files": {"README.md": "# demo\n"},
     "env": {"MAX_THINKING_TOKENS": "4000"},
     "rules": [{"when": {"last_user_contains": "first", "last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [{"type": "thinking", "thinking": "I should list the files."},
                                     TU("Bash", {"command": "ls", "description": "List files"})]}},
               {"when": {"last_is_tool_result": True}, "once": True,
                "reply": {"blocks": [{"type": "thinking", "thinking": "The listing is short."},
                                     T("There is a README.")]}},
               {"when": {"last_user_contains": "second"},
                "reply": {"blocks": [{"type": "thinking", "thinking": "A second thought."}, T("Second answer.")]}}],
     "steps": [{"prompt": "first: what files are here?", "args": ["--allowedTools", "Bash"]},
               {"prompt": "second: and now?", "resume": True, "args": ["--allowedTools", "Bash"]}]},

    # Deferred tools (issue 16; tests/fixtures/cc-2.1.114/tool-search): tool
    # search is off against a local server unless ENABLE_TOOL_SEARCH is set.
    # ToolSearch loads web fetch and a cron tool, the model calls one, a
    # second ToolSearch loads one more: what is sent after each load.
    {"name": "tool-search", "files": {"README.md": "# demo\n"},
     "env": {"ENABLE_TOOL_SEARCH": "true"},
     "rules": [{"when": {"last_is_tool_result": False}, "once": True,
                "reply": {"blocks": [TU("ToolSearch", {"query": "select:WebFetch,CronList", "max_results": 2})]}},
               {"when": {"last_is_tool_result": True}, "once": True,
                "reply": {"blocks": [TU("CronList", {})]}},
               {"when": {"last_is_tool_result": True}, "once": True,
                "reply": {"blocks": [TU("ToolSearch", {"query": "select:TodoWrite", "max_results": 1})]}},
               {"when": {"last_is_tool_result": True}, "once": True,
                "reply": {"blocks": [TU("Bash", {"command": "echo hi", "description": "Say hi"})]}},
               DONE],
     "steps": [{"prompt": "plan tasks", "args": ["--allowedTools", "ToolSearch,CronList,WebFetch,TodoWrite,Bash"]}]},
]
