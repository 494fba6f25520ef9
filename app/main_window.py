"""The main window: dataset browser, item views, labels, model and active-learning panels."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import re
import time
from pathlib import Path

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import Qt

from marginalia.exceptions import MarginaliaError, NotFittedError
from marginalia.types import Alignment, AnchorLabel, EventSpanLabel, RegionKind

from . import errors, theme
from .audio import AudioPlayer
from .bridge import EngineBridge
from .cheatsheet import CheatSheet
from .labelling import provisional_onsets
from .panels.active_panel import ActivePanel
from .panels.dataset_browser import DatasetBrowser
from .panels.label_list import LabelList
from .panels.model_panel import ModelPanel, short_id, version_choices
from .start_page import StartPage
from .views.profile_view import ProfileView
from .views.spectrogram_view import SpectrogramView
from .window_carry import CarryMixin
from .window_files import EXPORT_KINDS, ProjectFilesMixin
from .window_profile import WholeProfileMixin
from .window_queries import ActiveQueriesMixin
from .workers import LiveLearner, TaskRunner

log = logging.getLogger("marginalia.app.window")

#: the Edit menu's region kinds, by action name
KIND_ACTIONS = {"kind0": RegionKind.ZERO, "kind1": RegionKind.ONE, "kind2": RegionKind.AT_LEAST_ONE,
                "kindS": RegionKind.SAME}
NO_PROJECT_HINT = "Open a project (Ctrl+O), import data (Ctrl+I) or try the demo."
#: after the first item is shown, the spectrogram view of a project with recordings is built this much later (ms)
SPEC_VIEW_DELAY_MS = 300


class MainWindow(WholeProfileMixin, ActiveQueriesMixin, ProjectFilesMixin, CarryMixin, QtWidgets.QMainWindow):
    """Marginalia's main window over one :class:`marginalia.engine.Engine` (or none).

    Parameters
    ----------
    engine : Engine, optional
    settings : QSettings, optional
        Where layout, recent projects and the last position are remembered.
    """

    def __init__(self, engine=None, *, settings: QtCore.QSettings | None = None, parent=None):
        super().__init__(parent)
        self.settings = settings if settings is not None else QtCore.QSettings("Marginalia", "Marginalia")
        self.engine = None
        self.bridge = None
        self.learner = None
        self.runner = TaskRunner(self)
        self.current_item = None
        self._loading_item = None
        self.current_query = None
        self.current_question = None
        self._prefetch = None
        self._answering = False      # an answer was given and its next question is on its way
        self.infos = {}
        self.latencies = []          # seconds from a label edit to its redrawn prediction
        self.last_error_dialog = None
        self.last_io_result = None   # the last import or export: new item ids, labels or written paths
        self._items_refresh_timer = QtCore.QTimer(self)
        self._items_refresh_timer.setSingleShot(True)
        self._items_refresh_timer.setInterval(100)
        self._items_refresh_timer.timeout.connect(self.refresh_items)
        self._edit_t0 = None
        self._drawn_prediction = None
        self.drawn_at = None
        self._drawn_stale = False
        self._pending_frame = None
        self._frame_times = None
        self._item_payload = None
        self._shown_labels = None
        self.audio = None
        #: builds the player on first use (tests put a stand-in here when the machine has no audio device)
        self.audio_factory = AudioPlayer
        self.setWindowTitle("Marginalia")
        self.resize(1400, 880)
        self._save_timer = QtCore.QTimer(self, singleShot=True, interval=800)
        self._save_timer.timeout.connect(self._save_position)
        self._build_views()
        self._build_panels()
        self._build_actions()
        self._build_status()
        # after a model change, a prediction that no newer one replaced soon is redrawn as stale
        self._stale_timer = QtCore.QTimer(self, singleShot=True, interval=250)
        # the Edit menu names the next undo/redo step: refreshed once after a burst of label events
        self._undo_text_timer = QtCore.QTimer(self, singleShot=True, interval=50)
        self._undo_text_timer.timeout.connect(self._refresh_undo_actions)
        self._stale_timer.timeout.connect(self._restyle_if_stale)
        # the model panel's list of versions: read once after a burst of model changes (one per label)
        self._versions_timer = QtCore.QTimer(self, singleShot=True, interval=300)
        self._versions_timer.timeout.connect(self._refresh_versions)
        self.runner.busyChanged.connect(self._on_busy)
        self.runner.progress.connect(self._on_progress)
        geo = self._setting("window/geometry")
        if geo is not None:
            self.restoreGeometry(geo)
        state = self._setting("window/state")
        if state is not None:
            self.restoreState(state)
        if engine is not None:
            self.set_engine(engine)
        else:
            self._update_enabled()

    # ================================================================ building
    def _build_views(self):
        self.stack = QtWidgets.QStackedWidget()
        self.placeholder = QtWidgets.QLabel(NO_PROJECT_HINT)
        self.placeholder.setWordWrap(True)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setObjectName("hint")
        self.start_page = StartPage()
        self.start_page.demoRequested.connect(self.open_demo)
        self.start_page.newFromFilesRequested.connect(lambda: self.new_project_dialog(then_import=True))
        self.start_page.openRequested.connect(self.open_project_dialog)
        self.start_page.recentRequested.connect(self.open_project)
        self.profile_view = ProfileView()
        self._spec_view = None   # built when the first audio item is shown (faster start)
        self._genome_view = None  # built when a whole profile is first shown
        for w in (self.start_page, self.placeholder, self.profile_view):
            self.stack.addWidget(w)
        self.setCentralWidget(self.stack)
        self._connect_view(self.profile_view)

    def _connect_view(self, view):
        view.labelCreateRequested.connect(self.create_label)
        view.labelChangeRequested.connect(self.change_label)
        view.labelDeleteRequested.connect(self.delete_label)
        view.selectionChanged.connect(self._on_view_selection)
        view.vb.sigXRangeChanged.connect(lambda *_: self._save_timer.start())
        view.vb.boundary_mode = self.profile_view.vb.boundary_mode

    @property
    def spec_view(self) -> SpectrogramView:
        """The spectrogram + score view of audio items (built on first use)."""
        if self._spec_view is None:
            self._spec_view = SpectrogramView()
            self._spec_view.current_kind = self.profile_view.current_kind   # the kind the toolbar shows checked
            self.stack.addWidget(self._spec_view)
            self._connect_view(self._spec_view)
            self._spec_view.score_view.labelCreateRequested.connect(self.create_label)
        return self._spec_view

    @property
    def score_view(self):
        return self.spec_view.score_view

    @property
    def audio_page(self):
        return self.spec_view

    def _audio_shown(self) -> bool:
        return self._spec_view is not None and self.stack.currentWidget() is self._spec_view

    def _dock(self, title, widget, area, name):
        dock = QtWidgets.QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetClosable
                         | QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetFloatable)
        self.addDockWidget(area, dock)
        for button, tip in (("qt_dockwidget_closebutton", f"Close the {title} panel (View menu: show it again)"),
                            ("qt_dockwidget_floatbutton", f"Detach the {title} panel into its own window, or dock "
                                                          "it back")):
            found = dock.findChild(QtWidgets.QAbstractButton, button)
            if found is not None:
                found.setToolTip(tip)
        for signal in (dock.dockLocationChanged, dock.topLevelChanged, dock.visibilityChanged):
            signal.connect(lambda *_: self._save_timer.start())
        return dock

    def _build_panels(self):
        self.browser = DatasetBrowser()
        self.label_list = LabelList()
        self.model_panel = ModelPanel()
        self.active_panel = ActivePanel()
        self.browser_dock = self._dock("Dataset", self.browser, Qt.DockWidgetArea.LeftDockWidgetArea, "dataset")
        self.labels_dock = self._dock("Labels", self.label_list, Qt.DockWidgetArea.LeftDockWidgetArea, "labels")
        # in a scroll area: a short screen scrolls the panel instead of widening the dock (its labels wrap)
        model_scroll = QtWidgets.QScrollArea()
        model_scroll.setWidgetResizable(True)
        model_scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        model_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        model_scroll.setWidget(self.model_panel)
        self.model_dock = self._dock("Model", model_scroll, Qt.DockWidgetArea.RightDockWidgetArea, "model")
        self.active_dock = self._dock("Active learning", self.active_panel, Qt.DockWidgetArea.RightDockWidgetArea,
                                      "active")
        self.resizeDocks([self.browser_dock, self.model_dock], [380, 320], Qt.Orientation.Horizontal)
        self.resizeDocks([self.browser_dock, self.labels_dock], [520, 260], Qt.Orientation.Vertical)
        self.resizeDocks([self.model_dock, self.active_dock], [300, 560], Qt.Orientation.Vertical)
        self.browser.itemActivated.connect(self.show_item)
        self.browser.attachScoreRequested.connect(self.attach_score_dialog)
        self.browser.removeRequested.connect(self.remove_item)
        self.label_list.labelSelected.connect(self._on_list_selection)
        self.model_panel.retrainRequested.connect(self.retrain)
        self.model_panel.stopRequested.connect(self.stop_background_work)
        self.model_panel.liveToggled.connect(self._set_live)
        self.model_panel.versionsRequested.connect(self.model_versions_dialog)
        self.active_panel.nextRequested.connect(lambda s: self.next_question())
        self.active_panel.refreshRequested.connect(lambda s: self.refresh_queries())
        self.active_panel.queryActivated.connect(self.follow_query)
        self.active_panel.pickBest.connect(self.answer_model)
        self.active_panel.pickRunnerUp.connect(self.answer_runner_up)
        self.active_panel.pickNeither.connect(self.answer_neither)

    def _action(self, menu, name, text, slot, shortcut=None, tip="", checkable=False):
        act = QtGui.QAction(text, self)
        if shortcut:
            seqs = shortcut if isinstance(shortcut, (list, tuple)) else [shortcut]
            act.setShortcuts([QtGui.QKeySequence(s) for s in seqs])
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        tip = tip or text.replace("&", "").rstrip("\u2026")
        act.setStatusTip(tip)
        act.setToolTip(_with_keys(tip, act))
        act.setCheckable(checkable)
        if checkable:
            act.toggled.connect(slot)
        else:
            act.triggered.connect(lambda *_: slot())
        menu.addAction(act)
        self.addAction(act)
        self.actions[name] = act
        self._menu_of[name] = menu.title().replace("&", "")
        return act

    def _build_actions(self):
        self.actions = {}
        self._menu_of = {}
        mb = self.menuBar()
        m = mb.addMenu("&File")
        a = self._action
        a(m, "new", "&New project\u2026", self.new_project_dialog, QtGui.QKeySequence.StandardKey.New,
          tip="Create an empty project file, then import your data into it")
        a(m, "open", "&Open project\u2026", self.open_project_dialog, QtGui.QKeySequence.StandardKey.Open,
          tip="Open a Marginalia project (.marginalia)")
        a(m, "demo", "Open the &demo", self.open_demo, "Ctrl+Shift+D",
          tip="A small project with aCGH profiles and a recording with its score, to try every panel")
        self.recent_menu = m.addMenu("Open &recent")
        m.addSeparator()
        a(m, "import", "&Import data\u2026", self.import_dialog, "Ctrl+I",
          tip="aCGH profiles.csv, audio (WAV/FLAC/OGG/MP3) with its MIDI score")
        a(m, "import_labels", "Import &labels\u2026", self.import_labels_dialog, "Ctrl+Shift+I",
          tip="Add labels from a file: aCGH annotations.csv, a dataset bundle, or Audacity / Sonic Visualiser / Praat / JAMS "
              "files for the recording of the same name")
        self.export_menu = m.addMenu("&Export")
        for i, (kind, (title, _mode, _default)) in enumerate(EXPORT_KINDS.items(), start=1):
            a(self.export_menu, f"export:{kind}", title + "\u2026", lambda k=kind: self.export_dialog(k),
              f"Ctrl+E, {i}", tip=f"Write the {title}; asks where, and before replacing a file")
        m.addSeparator()
        a(m, "quit", "&Quit", self.close, "Ctrl+Q", tip="Close the window; every label is already saved")

        m = mb.addMenu("&Edit")
        a(m, "undo", "&Undo", self.undo, "Ctrl+Z", tip="Take back the last step of this session (an answer is one step)")
        a(m, "redo", "&Redo", self.redo, ["Ctrl+Shift+Z", "Ctrl+Y"], tip="Do again the step Undo took back")
        for name, plain in (("undo", "Undo"), ("redo", "Redo")):
            self.actions[name].setProperty("plain_name", plain)
        a(m, "history", "&History\u2026", self.show_history, "Ctrl+H",
          tip="every edit of the project, across sessions; restore the labels of any step")
        m.addSeparator()
        a(m, "kind0", "Region: no change (0)", lambda: self.set_region_kind(RegionKind.ZERO), "0",
          tip="Label kind of the next drag (or of the selected region): no change inside it")
        a(m, "kind1", "Region: exactly one change (1)", lambda: self.set_region_kind(RegionKind.ONE), "1",
          tip="Label kind of the next drag (or of the selected region): exactly one change inside it")
        a(m, "kind2", "Region: at least one change (2)", lambda: self.set_region_kind(RegionKind.AT_LEAST_ONE), "2",
          tip="Label kind of the next drag (or of the selected region): at least one change inside it")
        a(m, "kindS", "Region: same segment (S)", lambda: self.set_region_kind(RegionKind.SAME), "S",
          tip="Label kind of the next drag (or of the selected region): all of it in one segment")
        a(m, "boundary_mode", "&Boundary mode (click places a boundary)", self._set_boundary_mode, "Shift+B",
          tip="On: a click places a boundary. Off: a drag draws a region, Ctrl+click places a boundary",
          checkable=True)
        a(m, "delete", "&Delete label", self.delete_selected, ["Del", "Backspace"],
          tip="Delete the selected label (Ctrl+Z brings it back)")
        m.addSeparator()
        a(m, "attach_score", "&Attach / replace score\u2026", self.attach_score_dialog, "Ctrl+Alt+S",
          tip="Align the shown recording to a score (MIDI or MusicXML); Ctrl+Z takes it back")
        a(m, "remove_item", "Re&move item", self.remove_item, "Ctrl+Shift+Del",
          tip="Remove the shown item and its labels from the project; Ctrl+Z brings them back")
        a(m, "carry_labels", "&Carry labels to other recordings\u2026", self.carry_labels_dialog, "Ctrl+Shift+C",
          tip="Map the shown recording's labels onto other recordings of the same music (one step; Ctrl+Z "
              "takes them all back)")
        a(m, "accept_suggestion", "Accept the selected &suggestion", self.accept_selected_suggestion,
          ["Ctrl+Return", "Ctrl+Enter"], tip="Make the selected suggested (dotted) label an ordinary label the model "
                                             "learns from (Del rejects it)")
        a(m, "accept_all_suggestions", "Accept all suggestions &here", self.accept_item_suggestions,
          ["Ctrl+Shift+Return", "Ctrl+Shift+Enter"],
          tip="Make every suggested (dotted) label of the shown item an ordinary label, as one step")
        a(m, "reject_all_suggestions", "Re&ject all suggestions here", self.reject_item_suggestions,
          "Ctrl+Shift+Backspace", tip="Delete every suggested (dotted) label of the shown item, as one step")

        m = mb.addMenu("&View")
        a(m, "show_all", "Show &all", self.show_all, "Home", tip="Zoom out to the whole item")
        a(m, "zoom_in", "Zoom &in", lambda: self.zoom(0.5), ["+", "="], tip="Show half the range, around its centre")
        a(m, "zoom_out", "Zoom &out", lambda: self.zoom(2.0), "-", tip="Show twice the range")
        a(m, "next_item", "&Next item", lambda: self.step_item(+1), "Ctrl+Down",
          tip="Show the next item of the Dataset panel, in its order")
        a(m, "prev_item", "&Previous item", lambda: self.step_item(-1), "Ctrl+Up",
          tip="Show the previous item of the Dataset panel, in its order")
        a(m, "sort_uncertainty", "Sort items by &uncertainty", self.browser.sort_by_uncertainty, "Ctrl+U",
          tip="Sort the Dataset panel by margin, closest call first")
        a(m, "whole_profile", "&Whole profile (all chromosomes)", self.toggle_whole_profile, "G",
          tip="All chromosomes of this aCGH profile side by side; click one to zoom in (G again: back)")
        a(m, "compare_recordings", "&Compare with another recording\u2026", self.compare_recordings_dialog,
          "Ctrl+Shift+Y", tip="The shown recording above another of the same music, joined by the path that aligns "
                              "them, with where its labels would be carried")
        a(m, "light_theme", "&Light theme", self.toggle_light_theme, "Ctrl+Shift+T",
          tip="Dark text on a light background, from the next start (marginalia --theme light does it at once)",
          checkable=True)
        with QtCore.QSignalBlocker(self.actions["light_theme"]):    # showing the saved choice changes nothing
            self.actions["light_theme"].setChecked(str(self.settings.value("theme", "dark")) == "light")
        m.addSeparator()
        for i, (name, dock) in enumerate((("dock_dataset", self.browser_dock), ("dock_labels", self.labels_dock),
                                          ("dock_model", self.model_dock), ("dock_active", self.active_dock)),
                                         start=1):
            act = dock.toggleViewAction()
            act.setText(f"Show {dock.windowTitle().lower()} panel")
            act.setShortcut(QtGui.QKeySequence(f"Alt+{i}"))
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.setToolTip(_with_keys(f"Show or hide the {dock.windowTitle()} panel", act))
            m.addAction(act)
            self.actions[name] = act
            self._menu_of[name] = "View"

        m = mb.addMenu("&Model")
        a(m, "retrain", "&Retrain now", self.retrain, "Ctrl+R",
          tip="Full fit of this item's task (segmentation or alignment) from every label")
        a(m, "retrain_all", "Retrain &every task", lambda: self.retrain(every_task=True), "Ctrl+Shift+R",
          tip="Full fit of every task (copy number, segmentation, alignment) from all labels")
        a(m, "predict", "&Predict this item", self.predict_current, "Ctrl+P",
          tip="Decode the shown item again with the current model")
        a(m, "learn_sync_metric", "Learn the s&ync metric", self.learn_sync_metric, "Ctrl+Alt+Y",
          tip="Learn how to compare recordings of the same music from the project's sync anchors (placed in View "
              "\u25b8 Compare with another recording) and its recordings aligned to the same score; later "
              "comparisons and carries use it")
        a(m, "model_versions", "Model &versions\u2026", self.model_versions_dialog, "Ctrl+Shift+M",
          tip="The models of this item's task with their label counts; revert to one of them")
        a(m, "start_from", "Start from another project or model &file\u2026", self.start_from_dialog, "Ctrl+Shift+F",
          tip="Predict with what another project (or a model file) learned; retrains then couple your labels to it")
        a(m, "forget_prior", "&Forget the prior model", self.forget_prior, "Ctrl+Shift+G",
          tip="Stop coupling retrains to the model this task started from (the current model stays)")
        a(m, "stop", "&Stop background work", self.stop_background_work, "Esc",
          tip="Cancel the running retrain, ranking of questions or whole-profile drawing")
        a(m, "next_question", "&Next question", self.next_question, "Q",
          tip="Jump to the part where a label would help most")
        a(m, "accept", "&Model is right", self.answer_model, "A",
          tip="Store the labels the question's model answer writes (no question: accept the prediction here)")
        a(m, "accept_runner", "&Runner-up is right", self.answer_runner_up, ["B", "Shift+A"],
          tip="Store the labels the question's runner-up answer writes (no question: accept the runner-up here)")
        a(m, "neither", "N&either is right", self.answer_neither, "N",
          tip="Neither answer is right: draw the label yourself")

        m = mb.addMenu("&Play")
        a(m, "play", "&Play / stop", self.toggle_play, "Space",
          tip="Play the queried part or the visible range; on a question about one onset, the excerpt twice "
              "with a click at the model's onset, then at the runner-up's")

        m = mb.addMenu("&Help")
        a(m, "cheatsheet", "&Keyboard shortcuts", self.show_cheatsheet, "F1", tip="Every action and its keys")
        a(m, "tour", "Guided &tour of the panels", self.show_tour, "Shift+F1",
          tip="What each panel is for, one at a time (skippable)")
        a(m, "open_log", "Open the &log file", errors.open_log, "Ctrl+Shift+L",
          tip="What the app did and every error, with details (attach it to a bug report)")
        a(m, "about", "&About Marginalia", self.about, "Ctrl+F1", tip="Version and what Marginalia is for")

        # the kind the next drag creates is always visible: one of the four is checked (highlighted in the toolbar)
        self.kind_group = QtGui.QActionGroup(self)
        self.kind_group.setExclusive(True)
        for name, kind in KIND_ACTIONS.items():
            self.actions[name].setIcon(theme.kind_icon(kind))
            self.actions[name].setCheckable(True)
            self.kind_group.addAction(self.actions[name])
        # not a command (nothing to press): what a drag makes on an alignment item, shown in the kinds' place
        self.span_kind = QtGui.QAction(theme.swatch_icon(theme.ANCHOR), "Drag: event span", self)
        self.span_kind.setToolTip("On a recording aligned to its score a drag says \"the score events drawn in "
                                  "here start in here\"; a click on a note of the score anchors it")
        self.span_kind.setCheckable(True)
        self.kind_group.addAction(self.span_kind)
        self.span_kind.setVisible(False)
        self.actions["kind0"].setChecked(True)
        tb = self.addToolBar("Main")
        tb.setObjectName("main_toolbar")
        tb.setMovable(False)
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        for name in ("open", "import", None, "undo", "redo", None, "kind0", "kind1", "kind2", "kindS", "span_kind",
                     "boundary_mode", None, "retrain", "next_question", "accept", None, "play"):
            if name is None:
                tb.addSeparator()
            else:
                tb.addAction(self.span_kind if name == "span_kind" else self.actions[name])
        for name, short in (("kind0", "0 change"), ("kind1", "1 change"), ("kind2", "\u22651 change"),
                            ("kindS", "same"), ("boundary_mode", "boundary"),
                            ("next_question", "Next question"),
                            ("accept", "Model is right"), ("retrain", "Retrain"), ("play", "Play"),
                            ("open", "Open"), ("import", "Import"), ("undo", "Undo"), ("redo", "Redo")):
            self.actions[name].setIconText(short)
        self.span_kind.setIconText("event span")
        tb.toggleViewAction().setToolTip("Show or hide the toolbar")
        for button, tip in ((tb.findChild(QtWidgets.QToolButton, "qt_toolbar_ext_button"), "More tools"),
                            (mb.findChild(QtWidgets.QToolButton, "qt_menubar_ext_button"), "More menus")):
            if button is not None:   # shown when the window is too narrow for them all
                button.setToolTip(tip)
        self._refresh_recent_menu()

    def _build_status(self):
        sb = self.statusBar()
        self.activity = QtWidgets.QLabel("")
        self.progress = QtWidgets.QProgressBar()
        self.progress.setMaximumWidth(180)
        self.progress.setVisible(False)
        sb.addPermanentWidget(self.activity)
        sb.addPermanentWidget(self.progress)

    # ================================================================ engine
    def set_engine(self, engine):
        """Show ``engine``'s project (closing the previous one)."""
        self.close_engine()
        self.engine = engine
        self.bridge = EngineBridge(engine, self)
        # an import adds items one by one: one browser rebuild per item was quadratic (2.4 s for 233 items)
        self.bridge.itemsChanged.connect(self._on_items_changed)
        self.bridge.labelsChanged.connect(self._on_labels_changed)
        self.bridge.predictionChanged.connect(self._on_prediction_changed)
        self.bridge.modelChanged.connect(self._on_model_changed)
        self.bridge.progress.connect(lambda task, d, t, msg: self._on_progress(task, d, t, msg))
        self.bridge.undoStateChanged.connect(self._on_undo_state)
        self.learner = LiveLearner(engine, self.runner, self)
        self.learner.enabled = self.model_panel.live.isChecked()
        self.learner.task_of = lambda item_id: getattr(self.infos.get(item_id), "task", None)
        self.learner.predictionReady.connect(self._on_prediction_ready)
        self.learner.modelUpdated.connect(self._on_model_updated)
        self.learner.failed.connect(self._on_background_error)
        self._show_region_kind(RegionKind.ZERO)   # a new project starts from the default, not the last kind pressed
        path = str(getattr(engine, "path", "") or "")
        self.setWindowTitle(f"Marginalia \u2014 {os.path.basename(path) or 'project'}")
        if path:
            self._add_recent(path)
            self.settings.setValue("last_project", path)
            self.settings.sync()   # a crash from now on reopens this project
        self.model_panel.set_model(self._model_of(None))
        self._on_undo_state(engine.can_undo, engine.can_redo)
        self.refresh_items()
        last = self._setting(self._project_key("last_item"))
        ids = list(self.infos)
        target = last if last in self.infos else (ids[0] if ids else None)
        if target:
            self._pending_range = self._setting(self._project_key("x_range"))
            self.browser.select(target)
            if self.current_item != target:
                self.show_item(target)
        # rank questions once the first item is drawn: ranking every part is heavy and must not
        # delay the first prediction
        self._queries_pending = True
        if not self.infos:
            self._queries_pending = False
        self._update_enabled()

    def close_engine(self):
        if self.engine is None:
            return
        self._save_position()
        self.runner.shutdown()
        if self.learner is not None:
            self.learner.timer.stop()
            self.learner.deleteLater()
            self.learner = None
        if self.bridge is not None:
            self.bridge.close()
            self.bridge.deleteLater()
            self.bridge = None
        try:
            self.engine.close()
        except Exception as exc:  # closing must not stop the app
            log.warning("closing the project failed: %r", exc)
        self.engine = None
        self.current_item = None
        self.infos = {}
        self.browser.set_items([])
        # nothing of the closed project stays on screen: its item's labels, prediction and latency
        self._item_payload = self._drawn_prediction = self._shown_labels = None
        self.label_list.set_labels([])
        self.model_panel.latency.setText("no label since opening")
        # the questions were about the closed project's items
        self.current_query = self.current_question = self._prefetch = None
        self._follow_queries = self._answering = False
        self._clear_question_overlays()
        self.active_panel.set_queries([], {})
        self.active_panel.set_question(None)
        self.active_panel.set_curve([])
        self.model_panel.set_model(None)
        self.model_panel.set_versions([])
        self.model_panel.set_prior(None)
        self.model_panel.set_stopping(None)
        self._update_placeholder()
        self.stack.setCurrentWidget(self.start_page)

    def _setting(self, key, default=None):
        """A remembered value, or ``default`` when the settings file holds something unreadable."""
        try:
            return self.settings.value(key, default)
        except (RuntimeError, TypeError, ValueError) as exc:
            log.warning("ignoring the unreadable setting %s: %s", key, exc)
            return default

    def _project_key(self, key):
        path = str(getattr(self.engine, "path", "") or "")
        return f"projects/{hashlib.sha1(path.encode()).hexdigest()[:16]}/{key}"

    def refresh_items(self):
        if self.engine is None:
            return
        infos = self.engine.items()
        self.infos = {i.id: i for i in infos}
        self.browser.set_items(infos)
        self._update_placeholder()
        if self.current_item is None and self.stack.currentWidget() is self.start_page:
            self.stack.setCurrentWidget(self.placeholder)

    def _update_placeholder(self):
        """What the empty view says: open something, or (a project being open) import into it."""
        if self.engine is None:
            self.placeholder.setText(NO_PROJECT_HINT)
        elif not self.infos:
            self.placeholder.setText(f"{Path(self.engine.path).name} has no items yet: import data files "
                                     "(Ctrl+I): aCGH profile tables, audio recordings with their MIDI scores, "
                                     "or series as CSV.")

    def _update_enabled(self):
        has = self.engine is not None
        for name in ("import", "import_labels", "retrain", "predict", "next_question", "accept", "accept_runner", "neither",
                     "kind0", "kind1", "kind2", "kindS", "delete", "show_all", "play", "whole_profile", "history",
                     "model_versions", "attach_score", "remove_item"):
            self.actions[name].setEnabled(has)
        self.export_menu.setEnabled(has)

    # ================================================================ items
    def show_item(self, item_id: str):
        """Load ``item_id`` off the GUI thread and show it in its view."""
        if self.engine is None or item_id not in self.infos:
            return
        self.browser.select(item_id)   # may re-enter show_item through the browser's signal
        if item_id == self.current_item and self._item_payload is not None:
            if self.runner.is_busy("load"):   # back to the shown item while another was on its way
                self.runner.cancel("load")
                self._loading_item = None
            self._apply_pending_frame()
            return
        if item_id == self._loading_item and self.runner.is_busy("load"):
            return                     # already on its way: a second load would only wait for the first
        self._loading_item = item_id
        self._save_position()
        info = self.infos[item_id]
        engine = self.engine

        def load(cancel, progress):
            payload = {"info": info, "sequence": engine.sequence(item_id),
                       "labels": engine.labels(item_id, suggestions=True),
                       "prediction": engine.prediction(item_id)}
            if info.kind == "audio":
                payload["spectrogram"] = engine.spectrogram(item_id)
                payload["score"] = engine.score(item_id)
            return payload

        self.runner.submit("load", load, on_done=lambda p: self._display(item_id, p),
                           on_error=lambda e: self._show_error(f"Cannot show {info.name}", e),
                           description=f"loading {info.name}")

    def _display(self, item_id, payload):
        previous = self.infos.get(self.current_item) if self.current_item is not None else None
        self.current_item = item_id
        self._item_payload = payload
        self._drawn_prediction = None
        self._shown_labels = None
        if self.current_question is not None and self.current_question.item_id != item_id:
            self._clear_question_overlays()
        if self.learner is not None:
            self.learner.current_item = item_id
        info, seq = payload["info"], payload["sequence"]
        if previous is None or previous.task != info.task:
            self._refresh_curve()   # the learning curve and stopping signal are the shown item's task's
        self._frame_times = np.asarray(seq.positions, dtype=float)
        if self.audio is not None and self.audio.is_playing():
            self.audio.stop()
        if info.kind == "audio":
            image, times, freqs = payload["spectrogram"]
            self.spec_view.set_audio(seq, image, times, freqs, item_id)
            self.spec_view.show_score(payload.get("score"), self._frame_times)
            self.stack.setCurrentWidget(self.audio_page)
        else:
            self.profile_view.set_sequence(seq, item_id)
            self.stack.setCurrentWidget(self.profile_view)
        self._show_drag_kinds(info.task)
        self._set_labels(payload["labels"])
        self._show_model_of_current()
        self.settings.setValue(self._project_key("last_item"), item_id)
        pred = payload["prediction"]
        if pred is not None:
            self._draw_prediction(pred)
            if getattr(self, "_queries_pending", False):
                self._queries_pending = False
                self.refresh_queries()
            if self._drawn_stale and self.learner is not None:
                # made by a model a retrain has since replaced: shown grey until the current model's arrives
                self.learner.refresh(item_id)
        elif self.learner is not None:
            self.learner.refresh(item_id)
        self._show_item_queries()
        rng = getattr(self, "_pending_range", None)
        self._pending_range = None
        if rng:
            try:
                x0, x1 = float(rng[0]), float(rng[1])
                self.active_view().main.setXRange(x0, x1, padding=0)
            except (TypeError, ValueError, IndexError):
                pass
        self._apply_pending_frame()
        self.statusBar().showMessage(f"{info.name}: {info.n_samples} samples, {info.task}", 4000)
        if self._spec_view is None and any(i.kind == "audio" for i in self.infos.values()):
            # built once the first item is on screen, not when a question first jumps to a recording
            QtCore.QTimer.singleShot(SPEC_VIEW_DELAY_MS, self._build_spec_view)

    def _build_spec_view(self):
        if self._spec_view is None and self.engine is not None:
            _ = self.spec_view          # the property builds it

    def active_view(self):
        return self._spec_view if self._audio_shown() else self.profile_view

    def _set_labels(self, labels):
        labels = list(labels)
        if labels == self._shown_labels:
            return
        self._shown_labels = labels
        view = self.active_view()
        view.set_labels(labels)
        if self._audio_shown():
            self.score_view.set_labels(labels)
        units = "s" if self._audio_shown() else "bp"
        self.label_list.set_labels(labels, self._frame_times, units)
        self.label_list.select_label(view.selected_id)

    def step_item(self, step: int):
        ids = self.browser.item_ids_in_order()
        if not ids:
            return
        # keys pressed faster than items load step on from the one on its way, not the one still shown
        here = self._loading_item if self.runner.is_busy("load") else self.current_item
        i = ids.index(here) if here in ids else -1
        self.show_item(ids[(i + step) % len(ids)])

    def show_all(self):
        self.active_view().show_all()

    # ================================================================ labels
    def create_label(self, label):
        self._edit(lambda: self.engine.add_label(label), label.item_id, select=label.id)

    def change_label(self, label):
        self._edit(lambda: self.engine.change_label(label), label.item_id, select=label.id)

    def delete_label(self, label_id):
        self._edit(lambda: self.engine.delete_label(label_id), self.current_item)

    def delete_selected(self):
        self.active_view().delete_selected()

    def set_region_kind(self, kind):
        """The kind of the selected region, and of the regions drawn next (in every view), shown checked."""
        kind = RegionKind(kind)
        self.active_view().set_region_kind(kind)
        self._show_region_kind(kind)
        self.statusBar().showMessage(f"new regions: {theme.REGION_NAMES[kind]}", 3000)

    def _show_region_kind(self, kind):
        for view in (self.profile_view, self._spec_view):
            if view is not None:
                view.current_kind = kind
        name = next(n for n, k in KIND_ACTIONS.items() if k == kind)
        if not self.span_kind.isVisible():
            self.actions[name].setChecked(True)

    def _show_drag_kinds(self, task: str):
        """The toolbar shows what a drag makes on the shown item: a region of one of four kinds, or an event span.

        On an alignment item a drag marks where score events start (an event span) whatever region
        kind was picked last, so the four region kinds are hidden there rather than shown highlighted.
        """
        alignment = task == "alignment"
        for name in KIND_ACTIONS:
            self.actions[name].setVisible(not alignment)
        self.span_kind.setVisible(alignment)
        if alignment:
            self.span_kind.setChecked(True)
        else:
            kind = getattr(self.profile_view, "current_kind", RegionKind.ZERO)
            self.actions[next(n for n, k in KIND_ACTIONS.items() if k == kind)].setChecked(True)

    def _edit(self, fn, item_id, select=None):
        if self.engine is None:
            return
        self._edit_t0 = time.perf_counter()
        self._edit_cpu0 = time.thread_time()
        try:
            result = fn()
        except MarginaliaError as exc:
            self._refresh_labels()  # put dragged items back where the engine has them
            self.statusBar().showMessage(str(exc), 8000)
            self.last_error_dialog = errors.show_error(self, "This label was not accepted", exc)
            return
        if select is not None:
            self.active_view().select_label(getattr(result, "id", select))
        self._refresh_labels()
        self._on_undo_state(self.engine.can_undo, self.engine.can_redo)
        self._label_edited(item_id)
        self._show_provisional(result)
        last = self.learner.timeline[-1] if self.learner is not None and self.learner.timeline else {}
        if last.get("item") == item_id and "drawn" not in last and "edit_cpu_s" not in last:
            last["edit_cpu_s"] = time.thread_time() - self._edit_cpu0

    def _show_provisional(self, label):
        """After an anchor or event-span edit, bend the drawn alignment to it at once (drawn as stale) until
        the decoder answers.

        The constrained decode of a long recording takes a good fraction of a second; the bent
        alignment shows where the notes are going meanwhile. The window's prediction is unchanged.
        """
        pred = self._drawn_prediction
        if (not isinstance(label, (AnchorLabel, EventSpanLabel)) or pred is None or pred.item_id != label.item_id
                or label.item_id != self.current_item or not hasattr(pred.structure, "onsets")
                or self._frame_times is None or not self._audio_shown()):
            return
        T = len(self._frame_times)
        onsets = pred.structure.onsets
        last = label.event if isinstance(label, AnchorLabel) else label.last
        if not 0 <= last < len(onsets) or T < len(onsets):
            return

        def frame_of(t):
            return int(np.clip(np.searchsorted(self._frame_times, t), 0, T - 1))

        fixed = [lab.event for lab in self.engine.labels(label.item_id)
                 if isinstance(lab, AnchorLabel) and lab.id != label.id]
        if isinstance(label, AnchorLabel):
            bent = provisional_onsets(onsets, label.event, frame_of(label.time_s), fixed, n_frames=T)
        else:   # bring the span's first and last events inside it; those between follow
            f0, f1 = frame_of(label.t0_s), frame_of(label.t1_s)
            bent = np.asarray(onsets)
            if bent[label.first] < f0:
                bent = provisional_onsets(bent, label.first, f0, fixed, n_frames=T)
            if bent[label.last] > f1:
                bent = provisional_onsets(bent, label.last, f1, fixed + [label.first], n_frames=T)
        provisional = dataclasses.replace(pred, structure=Alignment(bent, T), runner_up=None, times_s=None)
        current = self._model_of(label.item_id)
        self.spec_view.set_prediction(provisional, stale=True, current_model=current)
        if self.spec_view.score_shown:
            self.score_view.set_prediction(provisional, stale=True, current_model=current)

    def _label_edited(self, item_id):
        if self.learner is not None and item_id is not None:
            self.learner.label_edited(item_id, since=self._edit_t0)   # cancels a ranking in flight
            if getattr(self, "_follow_queries", False):
                self.refresh_queries(then_follow=True)   # the person asked for a question (Q): rank again

    def _refresh_labels(self):
        if self.engine is None or self.current_item is None:
            return
        self._set_labels(self.engine.labels(self.current_item, suggestions=True))
        self._refresh_info(self.current_item)

    def _refresh_info(self, item_id):
        """Update one item's row (label count, prediction status, uncertainty) after an edit or a prediction."""
        if item_id is None:
            return
        try:
            info = self.engine.item_info(item_id)
        except AttributeError:     # an engine without the one-item summary
            info = next((i for i in self.engine.items() if i.id == item_id), None)
        except MarginaliaError:    # the item went away meanwhile
            return
        if info is not None:
            self.infos[info.id] = info
            self.browser.update_item(info)

    def _on_labels_changed(self, item_id, _ids):
        self._undo_text_timer.start()
        if item_id == self.current_item and item_id in self.infos:
            try:
                self._set_labels(self.engine.labels(item_id, suggestions=True))
            except MarginaliaError:   # the item went meanwhile (removed, or its removal redone)
                return
        if self.engine is not None:
            self._refresh_info(item_id)

    #: an undo of more labels than this asks first (it stays reversible: Ctrl+Shift+Z, Edit > History)
    UNDO_ASK_ABOVE = 5

    def undo(self):
        """Undo this session's latest step, naming it; a step of many labels is confirmed first."""
        if self.engine is None:
            return
        step = self.engine.next_undo
        if step is None:
            self.statusBar().showMessage("Nothing to undo in this session: edits made before the project was "
                                         "opened are in Edit \u25b8 History (Ctrl+H)", 15000)
            return
        if step.n_labels > self.UNDO_ASK_ABOVE and not self.ask_before_undo(step):
            self.statusBar().showMessage(f"Kept: {step.name}", 6000)
            return
        self._step_history("Undid", "Ctrl+Shift+Z to redo", lambda: self.engine.undo())

    def redo(self):
        if self.engine is None:
            return
        self._step_history("Redid", "Ctrl+Z to undo", lambda: self.engine.redo())

    def ask_before_undo(self, step) -> bool:
        """Ask before an undo that takes back many labels at once (tests replace this)."""
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Question, "Marginalia \u2014 Undo",
                                    f"Undo {step.name}?", QtWidgets.QMessageBox.StandardButton.Cancel, self)
        box.setInformativeText(f"This takes back {step.n_labels} label edits ({step.effect}). Redo (Ctrl+Shift+Z) "
                               "or Edit \u25b8 History brings them back.")
        undo = box.addButton("Undo", QtWidgets.QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QtWidgets.QMessageBox.StandardButton.Cancel)
        box.exec()
        return box.clickedButton() is undo

    def _step_history(self, verb: str, hint: str, step):
        """Undo or redo one step and say in the status bar what it was (it may be a whole import)."""
        before = {lab.id: lab for lab in self.engine.labels()}
        done = step()
        if done:
            self._edit_t0 = time.perf_counter()
            after = {lab.id: lab for lab in self.engine.labels()}
            what = getattr(done, "name", None) or self._describe_change(before, after)
            self.statusBar().showMessage(f"{verb}: {what} \u2014 {hint}", 15000)
            self._refresh_labels()
            self._refresh_label_counts(before, after)
            self._label_edited(self.current_item)
            self.resync_dialog()             # an undone sync anchor: the compare dialog's path follows
        self._on_undo_state(self.engine.can_undo, self.engine.can_redo)
        self._refresh_history()

    def show_history(self):
        """Edit > History: every step of the project; restore the labels of any of them as one new step."""
        if self.engine is None:
            return
        from .history_dialog import HistoryDialog
        if getattr(self, "history_dialog", None) is None:
            self.history_dialog = HistoryDialog(self)
            self.history_dialog.restoreRequested.connect(self.restore_step)
        self.history_dialog.set_engine(self.engine, self.infos)
        self.history_dialog.show()
        self.history_dialog.raise_()

    def _refresh_history(self):
        dialog = getattr(self, "history_dialog", None)
        if dialog is not None and dialog.isVisible() and self.engine is not None:
            dialog.set_engine(self.engine, self.infos)

    def restore_step(self, step_id: int):
        """Bring the labels back to their state after ``step_id``: one new step, undone by Ctrl+Z."""
        if self.engine is None:
            return
        before = {lab.id: lab for lab in self.engine.labels()}
        try:
            new = self.engine.restore(step_id)
        except MarginaliaError as exc:
            self._show_error("Cannot restore this step", exc)
            return
        if new is None:
            self.statusBar().showMessage(f"The labels already are those after step {step_id}", 8000)
        else:
            after = {lab.id: lab for lab in self.engine.labels()}
            self.statusBar().showMessage(f"Restored the labels after step {step_id} ({new.effect}) \u2014 "
                                         "Ctrl+Z to take it back", 15000)
            self._refresh_labels()
            self._refresh_label_counts(before, after)
            self._label_edited(self.current_item)
            self.resync_dialog()
        self._on_undo_state(self.engine.can_undo, self.engine.can_redo)
        self._refresh_history()

    def _describe_change(self, before: dict, after: dict, back: str = "added") -> str:
        """``"30 labels removed on 12 items (1:1, 1:2, ...)"``: what changed between two label sets."""
        added = [after[i] for i in after.keys() - before.keys()]
        removed = [before[i] for i in before.keys() - after.keys()]
        changed = [after[i] for i in after.keys() & before.keys() if after[i] != before[i]]
        parts = [f"{len(labs)} label{'s' if len(labs) != 1 else ''} {what}"
                 for labs, what in ((added, back), (removed, "removed"), (changed, "changed")) if labs]
        items = sorted({lab.item_id for lab in added + removed + changed},
                       key=lambda i: self.infos[i].name if i in self.infos else i)
        names = [self.infos[i].name if i in self.infos else i[:8] for i in items]
        where = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return (", ".join(parts) or "no label change") + (f" on {len(names)} item{'s' if len(names) != 1 else ''} "
                                                          f"({where})" if names else "")

    def _refresh_label_counts(self, before: dict, after: dict):
        """Update the browser rows of every item whose labels the step touched (not only the shown one)."""
        touched = {lab.item_id for lab in list(before.values()) + list(after.values())
                   if before.get(lab.id) != after.get(lab.id)}
        for item_id in touched:
            if item_id in self.infos and item_id != self.current_item:
                self._refresh_info(item_id)

    def _on_undo_state(self, _can_undo=None, _can_redo=None):
        self._refresh_undo_actions()

    def _refresh_undo_actions(self):
        """Name the steps Ctrl+Z and Ctrl+Shift+Z act on in the Edit menu ("Undo import of 676 labels")."""
        engine = self.engine
        undo_step = engine.next_undo if engine is not None and engine.can_undo else None
        redo_step = engine.next_redo if engine is not None and engine.can_redo else None
        # Ctrl+Z stays live with a project open: with nothing left in this session it says where the rest is
        self.actions["undo"].setEnabled(engine is not None)
        self.actions["redo"].setEnabled(redo_step is not None)
        self.actions["undo"].setText("&Undo" + (f" {_short(undo_step.name)}" if undo_step is not None else
                                                " (nothing in this session)" if engine is not None else ""))
        self.actions["redo"].setText("&Redo" + (f" {_short(redo_step.name)}" if redo_step is not None else ""))

    def _on_view_selection(self, label_id):
        self.label_list.select_label(label_id)

    def _on_list_selection(self, label_id):
        self.active_view().select_label(label_id)

    def _set_boundary_mode(self, on):
        for view in (self.profile_view, self._spec_view):
            if view is not None:
                view.vb.boundary_mode = bool(on)
        self.statusBar().showMessage("click places a boundary" if on else "drag draws a region; "
                                     "Ctrl+click places a boundary", 3000)

    # ================================================================ learning
    def _set_live(self, on):
        if self.learner is not None:
            self.learner.enabled = bool(on)
            if not on:
                self.learner.timer.stop()

    def retrain(self, *, every_task: bool = False):
        """Full fit of the current item's task (of every task with ``every_task``)."""
        if self.learner is not None:
            self._edit_t0 = None
            self.learner.retrain(every_task=every_task)

    #: lanes whose work the user may stop (the per-label update and item loading finish in a blink)
    STOPPABLE_LANES = ("retrain", "queries", "genome", "accept", "carry", "sync", "sync-learn")

    def stop_background_work(self):
        """Cancel the slow background work (the labels and the current prediction stay as they are)."""
        stopped = [lane for lane in self.STOPPABLE_LANES if self.runner.is_busy(lane)]
        if "queries" in stopped:
            self._follow_queries = False     # the question asked for will not come
        for lane in stopped:
            self.runner.cancel(lane)
        if self.learner is not None:
            self.learner.timer.stop()      # and no retrain on the current pause
        self.statusBar().showMessage("stopped: " + ", ".join(stopped) if stopped else "nothing to stop", 4000)
        return stopped

    def predict_current(self):
        if self.learner is not None and self.current_item:
            self.learner.refresh(self.current_item)

    def _model_of(self, item_id):
        """Id of the current model of ``item_id``'s task (None while it is not loaded).

        Never loads or builds a model here: that runs in the workers, off the GUI thread.
        """
        try:
            return self.engine.peek_model_id(item_id)
        except (AttributeError, MarginaliaError):
            return None

    def _better_model(self, model_id):
        try:
            return self.engine.better_model_than(model_id) if model_id else None
        except (AttributeError, MarginaliaError):
            return None

    def model_versions_dialog(self):
        """Model > Model versions: pick a stored model (with its label count) and make it current again."""
        if self.engine is None or self.current_item is None:
            return
        versions = self.engine.model_versions(self.current_item)
        if not versions:
            self.statusBar().showMessage("No model yet: label a few parts, then retrain (Ctrl+R)", 8000)
            return
        chosen = self.choose_model_version(versions)
        if chosen is None:
            return
        picked = next(v for v in versions if v["id"] == chosen)
        if picked["current"]:
            self.statusBar().showMessage(f"Model {short_id(chosen)} is already the current one", 6000)
            return
        previous = next((v["id"] for v in versions if v["current"] and v["task"] == picked["task"]), None)
        try:
            new_id = self.engine.revert_model(chosen)
        except MarginaliaError as exc:
            self._show_error("Cannot revert to this model", exc)
            return
        back = f"; to go back, revert to {short_id(previous)}" if previous else ""
        if picked["task"] == "sync":   # the metric of comparisons and carries: nothing of this item to redraw
            self.statusBar().showMessage(f"Restored the sync metric {short_id(chosen)} (fitted from "
                                         f"{picked['fitted_from']}) as {short_id(new_id)}: later comparisons and "
                                         f"carries use it{back}", 20000)
            self._versions_timer.start()
            self.resync_dialog()         # an open compare dialog redraws its path with the restored metric
            return
        self.statusBar().showMessage(f"Reverted to model {short_id(chosen)} (fitted on {picked['n_labels']} labels) "
                                     f"as {short_id(new_id)}{back}", 20000)
        self._show_model_of_current("revert")
        self.predict_current()

    def start_from_dialog(self):
        """Model > Start from another project or model file: the prior is read and checked in a worker."""
        if self.engine is None:
            return
        path = self.choose_prior_file()
        if not path:
            return
        engine, name = self.engine, os.path.basename(path)
        self.runner.cancel("retrain")      # a retrain finishing after the prior would replace it as the model

        def done(info):
            if self.engine is not engine:
                return
            if info.get("task") == "sync":  # the project's sync metric: a new version, no prior of a task
                self.statusBar().showMessage(f"The sync metric is now the one of {name} (fitted from "
                                             f"{info['fitted_from']}): later comparisons and carries use it; "
                                             "Model \u25b8 Model versions to go back", 20000)
                self._versions_timer.start()
                self.resync_dialog()
                return
            if info.get("rho") is None:     # an aligner: a retrain fits from its scorers and towards them
                then = "a retrain starts from its scorers"
            else:
                then = f"then your labels are coupled to it (\u03c1={info['rho']:g})"
            also = ("; the sync metric is now its own too (Model \u25b8 Model versions to go back)"
                    if info.get("sync") else "")
            self.statusBar().showMessage(f"Started from {name}: predictions are its own until you retrain; {then}"
                                         f"{also}", 20000)
            if info.get("sync"):
                self.resync_dialog()
            self._show_model_of_current("prior")
            self.refresh_items()
            self.predict_current()

        shown = self.engine.item_info(self.current_item) if self.current_item else None
        prefer = f"{shown.task}/{shown.kind}" if shown is not None else None
        self.runner.submit("prior", lambda cancel, progress: engine.start_from(path, prefer=prefer, cancel=cancel),
                           on_done=done,
                           on_error=lambda exc: self._show_error(f"Cannot start from {name}", exc),
                           description=f"reading {name}")

    def choose_prior_file(self) -> str:
        """Ask for the project or model file to start from; its path or "" (tests replace this)."""
        return self._open_path("Start from another project or model file",
                               "Marginalia projects and models (*.marginalia *.model *.npz);;All files (*)")

    def forget_prior(self):
        """Model > Forget the prior model: later retrains fit the labels alone."""
        if self.engine is None:
            return
        try:
            gone = self.engine.forget_prior(self.current_item)
        except MarginaliaError as exc:
            self._show_error("Cannot forget the prior model", exc)
            return
        self.statusBar().showMessage("No prior model to forget for this task" if gone is None else
                                     f"Forgot the prior model {os.path.basename(str(gone.get('source', '')))}: "
                                     "the next retrain fits your labels alone", 10000)
        self._versions_timer.start()

    def choose_model_version(self, versions):
        """Ask which model to revert to; its id, or None (tests replace this or the dialog's ``exec``)."""
        choices = version_choices(versions)
        dialog = QtWidgets.QInputDialog(self)
        dialog.setWindowTitle("Model versions")
        dialog.setLabelText("Make a model current again" + (" (the sync metric's versions first, then this item's "
                                                             "task's):" if any(v["task"] == "sync" for v in versions)
                                                             else ":"))
        dialog.setComboBoxItems([text for text, _ in choices])
        dialog.setComboBoxEditable(False)
        self.last_versions_dialog = dialog
        if dialog.exec() != QtWidgets.QDialog.DialogCode.Accepted:
            return None
        return dict(choices).get(dialog.textValue())

    def _show_model_of_current(self, kind: str = ""):
        if self.engine is None or self.current_item is None:
            return
        self.model_panel.set_model(self._model_of(self.current_item), kind)
        self._versions_timer.start()

    def _refresh_versions(self):
        """List the shown item's task's model versions in the model panel (read in a worker, not here)."""
        engine, item_id = self.engine, self.current_item
        if engine is None or item_id is None:
            self.model_panel.set_versions([])
            self.model_panel.set_prior(None)
            return

        def work(cancel, progress):
            return engine.model_versions(item_id)

        def done(versions):
            if self.engine is engine and self.current_item == item_id:
                self.model_panel.set_versions(versions)
                self._refresh_version_figures(engine, item_id)
            else:                       # the person moved on: list the item shown now
                self._versions_timer.start()

        def failed(exc):
            log.warning("model versions: %r", exc)
            self.model_panel.set_versions([])

        self.runner.submit("versions", work, on_done=done, on_error=failed)

    def _refresh_version_figures(self, engine, item_id):
        """Then each version's label errors and the prior's (decoding the labelled items: a worker's job)."""
        def work(cancel, progress):
            return (engine.model_versions(item_id, figures=True, cancel=cancel), engine.prior(item_id),
                    engine.prior_figures(item_id, cancel=cancel))

        def done(result):
            if self.engine is engine and self.current_item == item_id:
                versions, prior, figures = result
                self.model_panel.set_versions(versions)
                self.model_panel.set_prior(prior, figures)

        self.runner.submit("version-figures", work, on_done=done,
                           on_error=lambda exc: log.warning("model figures: %r", exc))

    def _on_model_updated(self, model_id, kind):
        self._show_model_of_current(kind)
        if kind in ("retrain", "auto-retrain"):
            better = self._better_model(model_id)
            if better is None:
                self.statusBar().showMessage("model retrained", 3000)
            else:   # never silently: the model fitted on more labels is kept and one click away
                self.statusBar().showMessage(
                    f"Model retrained on fewer labels than model {short_id(better['id'])} "
                    f"({better['n_labels']} labels), "
                    "which is kept: Model \u25b8 Model versions to revert to it", 20000)
            self.refresh_items()
            self._refresh_curve()
            if kind == "retrain":   # ranking every part is heavy: only when the user asked for a retrain
                self.refresh_queries()

    def _on_prediction_ready(self, item_id, pred, _seconds):
        if getattr(self, "_queries_pending", False):
            self._queries_pending = False
            self.refresh_queries()
        if item_id == self.current_item:
            c0 = time.thread_time()
            self._draw_prediction(pred)
            if self.model_panel.model_label.toolTip() != (self._model_of(item_id) or ""):
                self._show_model_of_current()
            self._recheck_question(pred)
            if self.learner is not None and self.learner.timeline and "drawn" not in self.learner.timeline[-1]:
                self.learner.timeline[-1]["drawn"] = time.perf_counter()
                self.learner.timeline[-1]["draw_cpu_s"] = time.thread_time() - c0
            if self._edit_t0 is not None:
                self.latencies.append(time.perf_counter() - self._edit_t0)
                self.model_panel.set_latency(self.latencies[-1])
                self._edit_t0 = None
        self._refresh_info(item_id)

    def _on_prediction_changed(self, item_id, _model_id):
        if item_id == self.current_item and self.engine is not None:
            pred = self.engine.prediction(item_id)
            if pred is not None:
                self._draw_prediction(pred)

    def current_prediction(self):
        return self._drawn_prediction

    def _is_stale(self, pred):
        current = self._model_of(pred.item_id)
        return current is not None and pred.model_id != current, current

    def _on_model_changed(self, _model_id):
        self._show_model_of_current()
        self._stale_timer.start()

    def _restyle_if_stale(self):
        """Draw the shown prediction as stale when a newer model exists (and no newer prediction came)."""
        pred = self._drawn_prediction
        if pred is None or self.engine is None or pred.item_id != self.current_item:
            return
        stale, _current = self._is_stale(pred)
        if stale != self._drawn_stale:
            self._draw_prediction(pred, force=True)

    def _draw_prediction(self, pred, *, force: bool = False):
        if pred is self._drawn_prediction and not force:
            return
        q = self.current_query
        if q is not None and q.item_id == pred.item_id:
            # a question about one phrase shows (and "Runner-up is right" accepts) that phrase's own runner-up
            pred = pred.for_part(q.start, q.stop)
        self._drawn_prediction = pred
        self.drawn_at = time.perf_counter()   # the repaint that shows it comes after this instant
        stale, current = self._is_stale(pred)
        self._drawn_stale = stale
        self.active_view().set_prediction(pred, stale=stale, current_model=current)
        if self._audio_shown() and self.spec_view.score_shown:
            self.score_view.set_prediction(pred, stale=stale, current_model=current)

    def _on_background_error(self, exc):
        if isinstance(exc, NotFittedError):
            self.statusBar().showMessage("no model yet: add a few labels, then retrain (Ctrl+R)", 6000)
            return
        if isinstance(exc, MarginaliaError):
            fix = errors.fix_for(exc)
            self.statusBar().showMessage(f"{exc} \u2014 {fix}" if fix else str(exc), 10000)
            log.warning("background: %s", exc)
            return
        self._show_error("Background work failed", exc)

    # ================================================================ audio
    def toggle_light_theme(self, checked=None):
        """Remember the light (or dark) theme for the next start; the colours of open plots are not redrawn."""
        light = self.actions["light_theme"].isChecked() if checked is None else bool(checked)
        self.settings.setValue("theme", "light" if light else "dark")
        self.settings.sync()
        self.statusBar().showMessage(f"the {'light' if light else 'dark'} theme applies from the next start",
                                     6000)

    def toggle_play(self):
        if self.engine is None or self.current_item is None:
            return
        info = self.infos.get(self.current_item)
        if info is None or info.kind != "audio":
            self.statusBar().showMessage("only audio items can be played", 3000)
            return
        if self.audio is None:
            self.audio = self.audio_factory(self)
            self.audio.positionChanged.connect(self._on_play_position)
        if not self.audio.available:   # say why at every press: a silent button looks broken
            self.statusBar().showMessage(self.audio.reason, 10000)
            self.actions["play"].setToolTip(self.audio.reason)
            return
        if self.audio.is_playing():
            self.audio.stop()
            return
        q = self.current_question
        if q is not None and q.item_id == self.current_item and q.event is not None:
            self.play_question_onsets()
            return
        part = self._part_here()
        t0 = float(self._frame_times[part[0]]) if part else 0.0
        t1 = float(self._frame_times[min(part[1], len(self._frame_times) - 1)]) if part else None
        self.audio.play(self.engine.audio_path(self.current_item), t0, t1)

    def _on_play_position(self, t_s):
        """Move the playback cursor; page the view forward when it runs off the right edge."""
        if self._spec_view is None:
            return
        self._spec_view.set_cursor(t_s)
        if t_s is None or not self._audio_shown():
            return
        x0, x1 = self._spec_view.x_range()
        if t_s > x1 or t_s < x0:
            w = x1 - x0
            lo = t_s - 0.05 * w if t_s > x1 else t_s - 0.5 * w
            self._spec_view.main.setXRange(lo, lo + w, padding=0)

    # ================================================================ status
    def prepare_kernels(self, then=None):
        """Compile the engine's kernels in the background (first run only), then call ``then()``."""
        message = "Preparing Marginalia (first run only): compiling its numerical kernels, about a minute"
        self.statusBar().showMessage(message)

        def work(cancel, progress):
            from marginalia.engine import Engine
            return Engine.prepare_kernels(progress=lambda done, total, name: progress(done, total, f"prepared {name}"))

        def done(_result):
            self.statusBar().showMessage("Ready: kernels prepared", 4000)
            if then is not None:
                then()

        def failed(exc):
            self.statusBar().showMessage(f"Preparing the kernels failed ({exc}); they compile on first use instead",
                                         10000)
            if then is not None:
                then()

        self.runner.submit("prepare", work, on_done=done, on_error=failed, description="preparing (first run only)")

    def _on_busy(self, lane, busy, description):
        lanes = self.runner.busy_lanes()
        text = ", ".join(d for d in lanes.values() if d)
        self.activity.setText(text)
        self.model_panel.set_activity(text, stoppable=any(lane in lanes for lane in self.STOPPABLE_LANES))
        if not lanes:
            self.progress.setVisible(False)

    def _on_progress(self, task, done, total, message):
        if total and total > 0:
            self.progress.setRange(0, int(total))
            self.progress.setValue(int(done))
            self.progress.setVisible(done < total)
        if message:
            self.activity.setText(message)

    # ================================================================ help
    def all_actions(self):
        return [(self._menu_of.get(name, ""), act) for name, act in self.actions.items()]

    def show_cheatsheet(self):
        self.cheatsheet = CheatSheet(self.all_actions(), self)
        self.cheatsheet.show()
        return self.cheatsheet

    def show_tour(self):
        """Help > Guided tour: walk through the panels (shown once by itself, on the first opening of the demo)."""
        from .tour import Tour
        if getattr(self, "tour", None) is None:
            self.tour = Tour(self)
            self.tour.finished.connect(lambda *_: self.settings.setValue("tour/seen", True))
        self.tour.start()
        return self.tour

    def about(self):
        QtWidgets.QMessageBox.about(self, "About Marginalia",
                                    "Marginalia \u2014 label the structure of sequences cheaply.\n"
                                    "Partial labels, structured learning, best-vs-second questions.")

    # ================================================================ closing
    def closeEvent(self, event):
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.close_engine()
        self.settings.sync()
        super().closeEvent(event)


def _with_keys(tip: str, action) -> str:
    """``"Retrain now (Ctrl+R)"``: a control's tooltip says what it does and its keys."""
    keys = action.shortcut().toString(QtGui.QKeySequence.SequenceFormat.NativeText)
    return f"{tip} ({keys})" if keys else tip


def _short(name: str, limit: int = 40) -> str:
    """A step's name short enough for a menu item: "import of 676 labels" (without its file), at most ``limit``."""
    name = re.sub(r" from [^()]*$", "", name)   # the source file is in the status bar and the history
    name = name if len(name) <= limit else name[:limit - 1] + "\u2026"
    return name.replace("&", "&&")   # a file name's "&" is not a menu mnemonic
