"""The shared plot style: distinct colours within a plot, footers that stay on the figure."""

from __future__ import annotations

from analysis import style


def test_a_profile_beside_default_does_not_get_defaults_red():
    # run tcp-sysctl/...-01fb drew `diiner` in default's red: palette[1] is the named red
    colours = style.colors_for(["default", "diiner", "tso-win-divisor-1"])
    assert colours[0] == style.NAMED["default"]
    assert len(set(colours)) == 3


def test_named_labels_keep_their_colour_and_repeats_share_one():
    colours = style.colors_for(["x", "wide-ports", "x", "default-tcp"])
    assert colours[1] == style.NAMED["wide-ports"] and colours[3] == style.NAMED["default"]
    assert colours[0] == colours[2] and colours[0] not in (colours[1], colours[3])


def test_more_labels_than_colours_still_get_one_each():
    labels = [f"p{i}" for i in range(20)]
    assert len(style.colors_for(labels)) == 20


def test_a_long_footer_wraps_inside_the_figure():
    fig, axes = style.new_figure()
    axes[0].plot([0, 1], [0, 1])
    style.finish(fig, "t", ["run x | " + ", ".join(f"param_{i}={i}" for i in range(40))])
    footer = fig.texts[-1].get_text().split("\n")
    assert len(footer) > 1 and all(len(line) <= style.FOOTER_CHARS for line in footer)
    fig.canvas.draw()
    box = fig.texts[-1].get_window_extent()
    assert box.x1 <= fig.bbox.x1
