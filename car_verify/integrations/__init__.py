"""The gate inside agent frameworks.

Each module here puts the one gate (:class:`car_verify.plan.gate.CallGate`)
in the place a framework offers for checking a tool call before it runs, and
reports each call's outcome back to it:

* :mod:`car_verify.integrations.openai_agents`: the OpenAI Agents SDK (a tool
  input guardrail, and the tools' invocation wrapped), ``pip install
  'car-verify[agents]'``;
* :mod:`car_verify.integrations.langchain`: LangChain 1.x agents (an agent
  middleware around each tool call), ``pip install 'car-verify[langchain]'``.

Importing this package loads no framework; each module loads its own when it
is imported.
"""
