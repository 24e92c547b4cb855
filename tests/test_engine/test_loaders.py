"""Dataloaders fitted to the machine: workers capped at the cores, no
pin_memory without an accelerator, one line saying so."""
from mmengine.config import ConfigDict

from pmsn_mm.engine.loaders import fit_loaders_to_machine


def _cfg():
    return ConfigDict(
        train_dataloader=dict(num_workers=8, pin_memory=True, batch_size=4),
        val_dataloader=dict(num_workers=1, batch_size=4),
        test_dataloader=None)


def test_workers_capped_and_pin_memory_dropped():
    cfg = _cfg()
    line = fit_loaders_to_machine(cfg, cores=2, accelerator=False)
    assert cfg.train_dataloader.num_workers == 2
    assert cfg.train_dataloader.pin_memory is False
    assert cfg.val_dataloader.num_workers == 1
    assert line == ('Dataloaders fitted to this machine (2 CPU cores; no '
                    'accelerator to pin memory for): train_dataloader.'
                    'num_workers 8 -> 2, train_dataloader.pin_memory True '
                    '-> False.')


def test_a_gpu_machine_keeps_pin_memory_and_a_fitting_config_is_kept():
    cfg = _cfg()
    line = fit_loaders_to_machine(cfg, cores=16, accelerator=True)
    assert line is None
    assert cfg.train_dataloader == dict(num_workers=8, pin_memory=True,
                                        batch_size=4)
