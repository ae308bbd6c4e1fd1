"""Every model id, threshold and switch of CruiseAgent, one module per concern.

    choices.py        the choices a field may take (one Literal per kind, and those other modules keep)
    groups.py         the shared settings groups (models, inputs, retrieval, peer_stages, answer, run),
                      their defaults the paper's values
    cruise_config.py  CruiseConfig: the records a run applied, the shared groups and one slot (`own`)
                      for the running system's own settings, handed in by its builder
    fields.py         the configuration's own flat field names, their group, type and default
                      (fixed: a system's own are read off its settings class when it is resolved)
    presets.py        the ablation presets (--preset)
    set_strings.py    --set FIELD=VALUE strings, typed by their fields
    validation.py     the checks a built configuration passes (ranges, contradicting switches, the
                      engine's refusals)
    loading.py        load_config and the other builders: the one place that looks a system up for a
                      configuration; the AIcrowd boundary (config_from_environment)

Each module is imported from where it lives (`from agents.config.loading import load_config`): this
package re-exports nothing. `python -m agents.config_cli` shows a profile's resolved settings.
"""
