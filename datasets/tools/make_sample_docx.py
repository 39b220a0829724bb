"""Build the Rustbound Salvagers team rules DOCX for the ragrig sample corpus.

The text lives in this file as data (``CONTENT``) so the document can be
regenerated at any time, and so test tooling can read the heading structure
without opening the DOCX.

Usage (from the repository root)::

    .venv/bin/python datasets/tools/make_sample_docx.py [output_path]

The default output is ``datasets/sample/teams/rustbound-salvagers.docx``.
The output is deterministic: the core properties use a fixed date and the
ZIP container is rewritten with fixed member timestamps, so re-running the
script produces a byte-identical file for a given python-docx version.
"""

from __future__ import annotations

import datetime as _dt
import io
import sys
import zipfile
from pathlib import Path

FIXED_DATE = _dt.datetime(2024, 1, 1, 0, 0, 0)
ZIP_DATE = (2024, 1, 1, 0, 0, 0)

DEFAULT_OUTPUT = (
    Path(__file__).resolve().parents[1] / "sample" / "teams" / "rustbound-salvagers.docx"
)

# Block types:
#   ("h", level, text)              heading, level 1-3
#   ("p", text)                     paragraph
#   ("p", bold_prefix, text)        paragraph starting with a bold run
#   ("ul", [item, ...])             bullet list
#   ("table", [header...], [[cell, ...], ...])
CONTENT: list[tuple] = [
    ("h", 1, "Rustbound Salvagers"),
    ("p", "The Rustbound are scavengers, engineers and scrap-merchants who strip the ruins of the "
          "Gloam for anything that still works. Their weapons are welded together from salvage and "
          "are as dangerous to their wielders as to their targets, and their armour is a patchwork "
          "of scavenged plates riveted directly onto their work coats. A Rustbound team is slow but "
          "stubborn, and excels at grabbing objectives and refusing to let go."),

    ("h", 2, "Team Composition"),
    ("p", "A Rustbound team consists of 8 operatives: 1 Foreman (LEADER) and 7 operatives selected "
          "from the following list:"),
    ("ul", [
        "Scrapper (up to 3)",
        "Rivet Gunner",
        "Slag Thrower",
        "Demolisher",
        "Tinker",
        "Hookhand",
    ]),
    ("p", "Rustbound teams can select tactical ops from the Recon and Security archetypes."),

    ("h", 2, "Faction Abilities"),
    ("h", 3, "RUSTBOUND - SCRAP ARMOUR"),
    ("p", "Layers of salvaged plating turn aside all but the heaviest blows. Whenever a friendly "
          "RUSTBOUND operative suffers damage from a normal success during a Shoot action, and the "
          "attacking weapon's Normal Damage is 3 or more, reduce that damage by 1. Scrap Armour does "
          "not apply to critical successes, to damage inflicted in a fight, or to damage from rules "
          "such as Devastating x or Hazardous terrain."),
    ("h", 3, "RUSTBOUND - SALVAGE RIGHTS"),
    ("p", "The Rustbound can strip a cache bare in seconds. Friendly RUSTBOUND operatives can perform "
          "the Pick Up action for 1 less AP (so it costs 0AP). They still cannot perform it more than "
          "once per activation, or while within Engagement Range of an enemy operative. In addition, "
          "a RUSTBOUND operative that is carrying a marker can still perform the Dash action."),

    ("h", 2, "Operatives"),
    ("h", 3, "Foreman"),
    ("p", "APL 3, Move 5\", Save 4+, Wounds 11. Keywords: RUSTBOUND, LEADER. Weapons: Rivet Pistol, "
          "Power Wrench."),
    ("p", "Shift Whistle: ", "Once per Turning Point, after a friendly RUSTBOUND operative within 6\" "
          "of this operative rolls for the Hot weapon rule, you can re-roll that dice. A dice "
          "re-rolled this way cannot be re-rolled again, for example with Command Re-roll."),
    ("h", 3, "Scrapper"),
    ("p", "APL 2, Move 5\", Save 5+, Wounds 8. Keywords: RUSTBOUND, WARRIOR. Weapons: Scrap Rifle, "
          "Scrap Blade."),
    ("h", 3, "Rivet Gunner"),
    ("p", "APL 2, Move 5\", Save 4+, Wounds 10. Keywords: RUSTBOUND, HEAVY GUNNER. Weapons: Rivet "
          "Cannon, Scrap Blade."),
    ("p", "Braced Rig: ", "The Rivet Cannon's Heavy (Dash only) rule does not prevent this operative "
          "from performing the Pick Up action in the same activation."),
    ("h", 3, "Slag Thrower"),
    ("p", "APL 2, Move 5\", Save 4+, Wounds 10. Keywords: RUSTBOUND. Weapons: Slag Projector, Scrap "
          "Blade."),
    ("p", "Molten Spray: ", "Enemy operatives that suffer damage from the Slag Projector cannot perform "
          "the Hunker Down action until the end of the Turning Point."),
    ("h", 3, "Demolisher"),
    ("p", "APL 2, Move 5\", Save 4+, Wounds 10. Keywords: RUSTBOUND. Weapons: Scrap Bomb, Scrap Blade."),
    ("p", "Controlled Demolition: ", "When this operative uses its Scrap Bomb, friendly RUSTBOUND "
          "operatives are never secondary targets of the Blast 2\" weapon rule."),
    ("h", 3, "Tinker"),
    ("p", "APL 2, Move 5\", Save 5+, Wounds 9. Keywords: RUSTBOUND, MEDIC. Weapons: Rivet Pistol, "
          "Scrap Blade."),
    ("p", "Patch Up (Unique action, 1AP): ", "Select one friendly RUSTBOUND operative within 1\" of "
          "this operative. That operative regains D3 lost wounds and, if it is Stunned, it is no "
          "longer Stunned. This is subject to the Healing Limits in Damage and Wounds. This operative "
          "cannot perform this action while within Engagement Range of an enemy operative."),
    ("h", 3, "Hookhand"),
    ("p", "APL 2, Move 6\", Save 4+, Wounds 12. Keywords: RUSTBOUND. Weapons: Piston Claw, Rivet Pistol."),
    ("p", "Hooked: ", "Enemy operatives within Engagement Range of this operative must spend 1 "
          "additional AP to perform the Fall Back action."),

    ("h", 2, "Weapon Profiles"),
    ("table",
     ["Weapon", "Type", "A", "Hit", "Dmg", "WR"],
     [
         ["Rivet Pistol", "Ranged", "4", "4+", "3/4", "Range 8\", Piercing Crits 1"],
         ["Scrap Rifle", "Ranged", "4", "4+", "3/4", "-"],
         ["Rivet Cannon", "Ranged", "5", "4+", "4/5", "Heavy (Dash only), Piercing Crits 1, Rending"],
         ["Slag Projector", "Ranged", "5", "2+", "3/3", "Range 6\", Torrent 2\", Hot"],
         ["Scrap Bomb", "Ranged", "4", "3+", "4/6", "Range 6\", Blast 2\", Limited 2, Hot"],
         ["Power Wrench", "Melee", "4", "3+", "4/5", "Stun"],
         ["Piston Claw", "Melee", "4", "3+", "4/5", "Brutal, Devastating 2"],
         ["Scrap Blade", "Melee", "3", "4+", "3/4", "-"],
     ]),

    ("h", 2, "Faction Ploys"),
    ("h", 3, "Overclock (Strategic Ploy)"),
    ("p", "1CP. ", "Until the end of the Turning Point, ranged weapons with the Hot weapon rule used by "
          "friendly RUSTBOUND operatives gain the Balanced weapon rule. However, whenever such an "
          "operative rolls a 1 for the Hot weapon rule, it suffers 3 damage instead of 1."),
    ("h", 3, "Salvaged Plating (Strategic Ploy)"),
    ("p", "1CP. ", "Until the end of the Turning Point, the Scrap Armour ability also applies to damage "
          "from critical successes during Shoot actions."),
    ("h", 3, "Emergency Vent (Firefight Ploy)"),
    ("p", "1CP. ", "Use this ploy after a friendly RUSTBOUND operative rolls for the Hot weapon rule. "
          "That operative suffers no damage from that roll."),
    ("h", 3, "Magnetic Grapple (Firefight Ploy)"),
    ("p", "1CP. ", "Use this ploy when a friendly RUSTBOUND operative performs the Pick Up action. It can "
          "pick up a marker within 3\" of it, instead of within 1\". It still cannot perform the "
          "action while within Engagement Range of an enemy operative."),

    ("h", 2, "Faction Equipment"),
    ("h", 3, "Spare Plates"),
    ("p", "1 equipment point. ", "Once per battle, when a friendly RUSTBOUND operative suffers damage "
          "from a critical success, reduce that damage by 2 (to a minimum of 1)."),
    ("h", 3, "Salvage Sack"),
    ("p", "1 equipment point. ", "One friendly RUSTBOUND operative can carry two markers at once, "
          "instead of one. It still counts as carrying a marker for all other rules."),
]


def headings() -> list[tuple[int, str]]:
    """Return the (level, text) of every heading, in document order."""
    return [(block[1], block[2]) for block in CONTENT if block[0] == "h"]


def build_document():
    import docx  # python-docx

    doc = docx.Document()
    props = doc.core_properties
    props.title = "Rustbound Salvagers"
    props.subject = "Gloamline team rules (sample corpus for ragrig)"
    props.author = "ragrig"
    props.last_modified_by = "ragrig"
    props.category = "team"
    props.keywords = "gloamline, team, rustbound"
    props.comments = "Generated by datasets/tools/make_sample_docx.py"
    props.created = FIXED_DATE
    props.modified = FIXED_DATE
    props.last_printed = FIXED_DATE
    props.revision = 1

    for block in CONTENT:
        kind = block[0]
        if kind == "h":
            doc.add_heading(block[2], level=block[1])
        elif kind == "p":
            if len(block) == 2:
                doc.add_paragraph(block[1])
            else:
                para = doc.add_paragraph()
                para.add_run(block[1]).bold = True
                para.add_run(block[2])
        elif kind == "ul":
            for item in block[1]:
                doc.add_paragraph(item, style="List Bullet")
        elif kind == "table":
            header, rows = block[1], block[2]
            table = doc.add_table(rows=1, cols=len(header))
            table.style = "Table Grid"
            for cell, text in zip(table.rows[0].cells, header):
                cell.text = text
            for row in rows:
                cells = table.add_row().cells
                for cell, text in zip(cells, row):
                    cell.text = text
        else:  # pragma: no cover - data error
            raise ValueError(f"unknown block type {kind!r}")
    return doc


def _normalise_zip(data: bytes) -> bytes:
    """Rewrite the ZIP container with fixed timestamps for reproducible output."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            new = zipfile.ZipInfo(info.filename, date_time=ZIP_DATE)
            new.compress_type = zipfile.ZIP_DEFLATED
            new.external_attr = 0o644 << 16
            dst.writestr(new, src.read(info.filename))
    return out.getvalue()


def main(argv: list[str]) -> int:
    output = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUTPUT
    buf = io.BytesIO()
    build_document().save(buf)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(_normalise_zip(buf.getvalue()))
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
