"""deepcollapse.experiments"""
