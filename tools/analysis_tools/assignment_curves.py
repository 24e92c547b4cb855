"""Curves of :class:`~pmsn_mm.engine.hooks.PrototypeAssignmentHook` points
over training, drawn with matplotlib's Agg canvas (no pyplot state), for
``prior_toy_study.py`` beside it."""
from typing import Mapping, Sequence, Tuple

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

#: One panel per tuple: title, then ``(point key, line style, legend)``.
PANELS: Tuple[tuple, ...] = (
    ('NMI(argmax prototype, label)', ('nmi_digit', 'b-', 'digit'),
     ('nmi_background', 'r-', 'background')),
    ('entropies (nats)', ('mean_anchor_entropy', 'g-', 'mean H(p_i)'),
     ('mean_probs_entropy', 'k-', 'H(p̄)')),
    ('prototypes used (argmax)', ('num_used_anchor', 'g-', 'online'),
     ('num_used_target', 'm--', 'EMA target')),
    ('collapse indicator (1 = isotropic)',
     ('collapse_indicator', 'k-', None)),
)


def plot_assignment_curves(curves: Mapping[int, Sequence[dict]],
                           out_file: str, title: str) -> str:
    """Write a PNG of NMI, entropies, usage and collapse over training.

    Args:
        curves: ``{seed: points}``, each point a dict with ``iter`` and the
            keys of :data:`PANELS` (a key missing from the points, e.g. a
            label the hook did not have, is left out of its panel).
        out_file: PNG path.
        title: Figure title.

    Returns:
        ``out_file``.
    """
    fig = Figure(figsize=(12, 3.2), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(PANELS))
    first = min(curves) if curves else None
    for ax, (name, *lines) in zip(axes, PANELS):
        for seed, points in curves.items():
            for key, style, label in lines:
                if points and key in points[0]:
                    ax.plot([p['iter'] for p in points],
                            [p[key] for p in points], style,
                            label=label if seed == first else None)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel('iteration', fontsize=8)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out_file)
    return out_file
