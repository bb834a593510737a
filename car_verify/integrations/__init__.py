"""The gate inside agent frameworks.

Each module here puts the one gate (:class:`car_verify.plan.gate.CallGate`)
in the place a framework offers for checking a tool call before it runs, and
reports each call's outcome back to it:

* :mod:`car_verify.integrations.openai_agents`: the OpenAI Agents SDK
  (``guard_agent``: a tool input guardrail and the invocation wrapped on every
  path to a tool, MCP servers wrapped), ``pip install 'car-verify[agents]'``;
* :mod:`car_verify.integrations.langchain`: LangChain 1.x agents and LangGraph
  tool nodes (an agent middleware whose check runs right before each tool),
  ``pip install 'car-verify[langchain]'``.

A run is the unit: one gate per agent run, whatever the framework does inside
it (:mod:`car_verify.integrations._runs`).

Importing this package loads no framework; each module loads its own when it
is imported.
"""
