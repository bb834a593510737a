"""Grammars of car-verify's small languages, installed as ``car_verify.grammars``."""
