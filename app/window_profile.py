"""The whole-profile view: every chromosome of one aCGH profile side by side, and zooming into one."""

from __future__ import annotations

import numpy as np

from .views.genome_view import Chromosome, GenomeView


class WholeProfileMixin:
    """Whole-profile view of :class:`~app.main_window.MainWindow` (``G``): all chromosomes of one aCGH profile.

    Mixed into the window; uses its engine, runner, views and panels.
    """

    @property
    def genome_view(self) -> GenomeView:
        """The whole-profile overview (built on first use)."""
        if self._genome_view is None:
            self._genome_view = GenomeView()
            self.stack.addWidget(self._genome_view)
            self._genome_view.chromosomeActivated.connect(self._zoom_to_chromosome)
        return self._genome_view

    def whole_profile_shown(self) -> bool:
        return self._genome_view is not None and self.stack.currentWidget() is self._genome_view

    def profile_members(self, item_id: str) -> list:
        """Ids of the aCGH items of ``item_id``'s profile, in chromosome order."""
        from .panels.dataset_browser import natural_key

        def profile_of(i):
            meta = getattr(self.engine.item(i), "meta", None) or {}
            return meta.get("profile_id", self.infos[i].name.split(":")[0])

        mine = profile_of(item_id)
        ids = [i for i, info in self.infos.items() if info.kind == "cgh" and profile_of(i) == mine]
        return sorted(ids, key=lambda i: natural_key(str(self.infos[i].group or self.infos[i].name)))

    def toggle_whole_profile(self):
        """Show every chromosome of the current profile side by side, or go back to the chromosome."""
        if self.engine is None or self.current_item is None:
            return
        if self.whole_profile_shown():
            self.stack.setCurrentWidget(self.profile_view)
            return
        info = self.infos.get(self.current_item)
        if info is None or info.kind != "cgh":
            self.statusBar().showMessage("only aCGH items belong to a profile with chromosomes", 4000)
            return
        members = self.profile_members(self.current_item)
        engine, infos = self.engine, dict(self.infos)
        meta = getattr(engine.item(self.current_item), "meta", None) or {}
        title = f"profile {meta.get('profile_id', info.name.split(':')[0])}: {len(members)} chromosomes"

        def work(cancel, progress):
            out = []
            for k, item_id in enumerate(members):
                if cancel.is_set():
                    return None
                seq = engine.sequence(item_id)
                pred = engine.prediction(item_id) or engine.predict(item_id, cancel=cancel)
                name = str(infos[item_id].group or infos[item_id].name)
                out.append(Chromosome(item_id, name, np.asarray(seq.positions, dtype=float),
                                      np.asarray(seq.values[:, 0], dtype=float), pred,
                                      tuple(engine.labels(item_id))))
                progress(k + 1, len(members), f"whole profile: {k + 1}/{len(members)} chromosomes")
            return out

        def done(chromosomes):
            if chromosomes is None:
                return
            self.genome_view.set_profile(title, chromosomes, current=self.current_item)
            self.stack.setCurrentWidget(self.genome_view)

        self.runner.submit("genome", work, on_done=done,
                           on_error=lambda e: self._show_error("Cannot show the whole profile", e),
                           description="drawing the whole profile")

    def _zoom_to_chromosome(self, item_id: str):
        if item_id == self.current_item:
            self.stack.setCurrentWidget(self.profile_view)
        else:
            self.show_item(item_id)

    def zoom(self, factor: float):
        view = self.active_view()
        x0, x1 = view.x_range()
        c, h = 0.5 * (x0 + x1), 0.5 * (x1 - x0) * factor
        view.main.setXRange(c - h, c + h, padding=0)

    def _save_position(self):
        """Remember the layout and where the user is, on disk at once: a crash must not lose them."""
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        if self.engine is not None and self.current_item is not None:
            self.settings.setValue(self._project_key("last_item"), self.current_item)
            # plain floats: numpy scalars would be pickled into the file and fail to load in the next session
            self.settings.setValue(self._project_key("x_range"), [float(v) for v in self.active_view().x_range()])
        self.settings.sync()
