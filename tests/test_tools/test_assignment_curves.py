"""plot_assignment_curves: a decodable PNG with one panel per statistic."""
import matplotlib.image

from tests._tools import import_beside_tools

curves = import_beside_tools('tools/analysis_tools/assignment_curves.py')
PANELS, plot_assignment_curves = curves.PANELS, curves.plot_assignment_curves


def _points(scale):
    return [
        dict(iter=i, nmi_digit=scale * i, nmi_background=0.1,
             mean_anchor_entropy=2 - i, mean_probs_entropy=2.2,
             num_used_anchor=3 + i, num_used_target=2,
             collapse_indicator=0.5) for i in range(3)
    ]


def test_writes_a_decodable_png(tmp_path):
    out = str(tmp_path / 'curves.png')
    assert plot_assignment_curves({0: _points(.1), 1: _points(.2)}, out,
                                  'two seeds') == out
    image = matplotlib.image.imread(out)
    # 12 x 3.2 inches at 100 dpi, something drawn
    assert image.shape[:2] == (320, 1200) and image.std() > 0


def test_panels_and_missing_keys(tmp_path):
    assert [p[0] for p in PANELS][0] == 'NMI(argmax prototype, label)'
    points = [{k: v for k, v in p.items() if k != 'nmi_background'}
              for p in _points(.1)]  # a label the hook did not have
    out = str(tmp_path / 'c.png')
    plot_assignment_curves({3: points}, out, 'one seed')
    assert matplotlib.image.imread(out).ndim == 3
