# boxer's chart results (docs/e2b.md, "Charts"): what a matplotlib figure
# a cell shows holds, as the "chart" E2B's code interpreter answers beside
# its PNG (the JS SDK's ChartTypes): a line, scatter, bar, pie or
# box-and-whisker chart of one Axes, its title, labels, ticks and
# elements, or a "superchart" of several Axes. session_cell.py loads this
# file from /code for the first figure a cell shows; matplotlib is loaded
# by then.
import datetime
import re
from decimal import Decimal, localcontext

import matplotlib.dates
import numpy
from matplotlib.collections import PathCollection
from matplotlib.lines import Line2D
from matplotlib.patches import PathPatch, Rectangle, Wedge
from matplotlib.text import Text

UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")


def figure_chart(fig):
    """The chart of fig, or None when it has no data."""
    axes = fig.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return None
    if len(axes) > 1:
        # Figure.get_suptitle is matplotlib 3.8's; Debian's is 3.6.
        title = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""
        return {"type": "superchart", "title": title or None, "elements": [axes_chart(ax) for ax in axes]}
    return axes_chart(axes[0])


def chart_type(ax):
    objects = [o for o in ax._children if not isinstance(o, Text)]
    if all(isinstance(o, Line2D) for o in objects):
        return "line"
    if all(isinstance(o, (PathPatch, Line2D)) for o in objects):
        return "box_and_whisker"
    objects = [o for o in objects if not (isinstance(o, Line2D) and is_grid_line(o))]
    for kind, types in (("scatter", PathCollection), ("pie", Wedge), ("bar", Rectangle)):
        if all(isinstance(o, types) for o in objects):
            return kind
    return "unknown"


def axes_chart(ax):
    kind = chart_type(ax)
    chart = {"type": kind, "title": ax.get_title() or None, "elements": []}
    if kind == "pie":
        for wedge in ax.patches:
            angle = abs(dynamic_round(Decimal(float(wedge.theta2)) - Decimal(float(wedge.theta1))))
            chart["elements"].append({"label": wedge.get_label(), "angle": float(angle), "radius": float(wedge.r)})
        return chart
    if kind == "unknown":
        return chart
    labels(chart, ax)
    if kind in ("line", "scatter"):
        points(chart, ax, kind)
    elif kind == "bar":
        bars(chart, ax)
    else:
        boxes(chart, ax)
    return chart


def labels(chart, ax):
    for axis, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
        chart[axis + "_label"] = label or None
        match = UNIT.search(label) if label else None
        chart[axis + "_unit"] = (match.group(1) or match.group(2)) if match else None


def swap(chart):
    chart["x_label"], chart["y_label"] = chart["y_label"], chart["x_label"]
    chart["x_unit"], chart["y_unit"] = chart["y_unit"], chart["x_unit"]


def is_date(axis):
    return isinstance(axis.converter, matplotlib.dates._SwitchableDateConverter)


def points(chart, ax, kind):
    for name, axis, tick_labels, ticks, scale in (
            ("x", ax.xaxis, ax.get_xticklabels(), ax.get_xticks(), ax.get_xscale()),
            ("y", ax.yaxis, ax.get_yticklabels(), ax.get_yticks(), ax.get_yscale())):
        texts = [t.get_text() for t in tick_labels]
        if is_date(axis):
            values = [matplotlib.dates.num2date(t).isoformat() for t in ticks]
        else:
            values = [float(t) if isinstance(t, (int, float)) else t for t in ticks]
        chart[name + "_ticks"] = values
        chart[name + "_tick_labels"] = texts
        chart[name + "_scale"] = detect_scale(axis, scale, values, texts)
    if kind == "line":
        for line in ax.get_lines():
            if is_grid_line(line):
                continue
            label = line.get_label()
            if label.startswith("_child"):
                label = "Line %d" % int(label[6:])
            chart["elements"].append({"label": label, "points": [[point(x), point(y)] for x, y in zip(line.get_xdata(), line.get_ydata())]})
    else:
        for coll in ax.collections:
            chart["elements"].append({"label": coll.get_label(), "points": [[point(x), point(y)] for x, y in coll.get_offsets()]})


def detect_scale(axis, scale, ticks, texts):
    if is_date(axis):
        return "datetime"
    if scale != "linear":
        return scale
    for i, (tick, text) in enumerate(zip(ticks, texts)):
        if isinstance(tick, (int, float)) and tick == i and str(i) != text:
            continue
        return "linear"
    return "categorical"


def point(v):
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, numpy.datetime64):
        return str(v.astype("datetime64[s]"))
    if isinstance(v, str):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def bars(chart, ax):
    for container in ax.containers:
        group = container.get_label()
        if group.startswith("_container"):
            group = "Group %d" % int(group[10:])
        heights = [rect.get_height() for rect in container]
        if all(h == heights[0] for h in heights):
            # Bars of one height: horizontal ones (barh), their values
            # their widths.
            swap(chart)
            names = [t.get_text() for t in ax.get_yticklabels()]
            values = [rect.get_width() for rect in container]
        else:
            names = [t.get_text() for t in ax.get_xticklabels()]
            values = heights
        for name, value in zip(names, values):
            chart["elements"].append({"label": name, "group": group, "value": float(value)})


def boxes(chart, ax):
    found = []
    for name, patch in zip([t.get_text() for t in ax.get_xticklabels()], ax.patches):
        vertices = patch.get_path().vertices
        xs = [dynamic_round(x) for x in vertices[:, 0]]
        ys = [dynamic_round(y) for y in vertices[:, 1]]
        found.append({"x": min(xs), "y": min(ys), "label": name, "width": max(xs) - min(xs), "height": max(ys) - min(ys), "outliers": []})
    vertical = all(b["height"] == found[0]["height"] for b in found)
    if vertical:
        swap(chart)
        for b in found:
            b["x"], b["y"], b["width"], b["height"] = b["y"], b["x"], b["height"], b["width"]
    for line in ax.lines:
        xs = [dynamic_round(x) for x in line.get_xdata()]
        ys = [dynamic_round(y) for y in line.get_ydata()]
        if vertical:
            xs, ys = ys, xs
        if len(xs) == 1:
            box = next((b for b in found if b["x"] <= xs[0] <= b["x"] + b["width"]), None)
            if box is not None:
                box["outliers"].append(ys[0])
        if len(ys) != 2:
            continue
        box = next((b for b in found if b["x"] <= xs[0] <= xs[1] <= b["x"] + b["width"]), None)
        if box is None:
            continue
        if ys[0] == ys[1] and box["y"] <= ys[0] <= box["y"] + box["height"]:
            box["median"] = ys[0]
        elif max(ys) == box["y"]:
            box["whisker_lower"] = min(ys)
        elif min(ys) == box["y"] + box["height"]:
            box["whisker_upper"] = max(ys)
    for b in found:
        chart["elements"].append({
            "label": b["label"], "min": float(b.get("whisker_lower", b["y"])), "first_quartile": float(b["y"]),
            "median": float(b.get("median", b["y"])), "third_quartile": float(b["y"] + b["height"]),
            "max": float(b.get("whisker_upper", b["y"] + b["height"])), "outliers": [float(o) for o in b["outliers"]],
        })


def is_grid_line(line):
    xs, ys = line.get_xdata(), line.get_ydata()
    return len(xs) == 2 and len(ys) == 2 and (xs[0] == xs[1] or ys[0] == ys[1])


def dynamic_round(number):
    """number to 8 significant digits, as a Decimal."""
    d = Decimal(str(number))
    with localcontext() as ctx:
        ctx.prec = max(1, 8 - d.adjusted())
        return +d
