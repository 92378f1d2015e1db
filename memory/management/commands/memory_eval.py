"""Measure retrieval quality on the labelled French evaluation set (recall@5, recall@10, MRR)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from memory.management.french import FrenchCommand
from memory.management.paths import file_check


class Command(FrenchCommand):
    help = (
        "Charge le jeu d'évaluation dans une mémoire jetable et affiche recall@5/@10 et le MRR "
        "par mode."
    )

    def add_arguments(self, parser):
        parser.add_argument("--mode", choices=["semantic", "text", "hybrid", "all"], default="all")
        parser.add_argument(
            "--dataset", type=Path, default=None, help="Un autre fichier de jeu d'évaluation."
        )
        parser.add_argument(
            "--tags", action="store_true", help="Afficher aussi les scores par tag de question."
        )
        parser.add_argument(
            "--misses", action="store_true", help="Lister aussi les questions manquées à 10."
        )

    def handle(self, *args, mode, dataset, tags, misses, **options):
        from memory.exceptions import MemoryServiceError
        from memory.services.evaluation import (
            DATASET_PATH,
            MODES,
            dataset_load,
            evaluation_run,
            scores_table,
        )

        path = dataset or DATASET_PATH
        file_check(path, missing="Jeu d'évaluation introuvable : {path}")
        modes = MODES if mode == "all" else (mode,)
        try:
            dataset_load(path)  # a French error before any work
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        scores = evaluation_run(modes=modes, path=path, out=self.stdout.write)
        self.stdout.write(scores_table(scores))
        for score in scores:
            if tags:
                self.stdout.write(f"\n{score.mode} par tag :")
                for tag, row in score.per_tag.items():
                    self.stdout.write(
                        f"  {tag:<14} n={row['n']:<3} recall@5 {row['recall@5']:.3f}  "
                        f"recall@10 {row['recall@10']:.3f}  MRR {row['mrr']:.3f}"
                    )
            if misses and score.misses:
                self.stdout.write(f"{score.mode}, manqués à 10 : {', '.join(score.misses)}")
